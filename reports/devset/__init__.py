"""Judge development with a locked test set: a study's split, dev-set comparisons, final versions, test-set looks."""
