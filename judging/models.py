"""Judges, judge runs and item labels (built in the judging issue)."""
