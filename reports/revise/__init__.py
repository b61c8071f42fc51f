"""Revise a judge from a failure mode: a new version with one item's instruction edited, run on the development set only."""
