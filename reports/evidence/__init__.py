"""Evidence agreement: the turns a judge cites against the turns clinicians cite (issue 27)."""
