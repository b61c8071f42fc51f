"""Reminder emails to raters with work left: sent by a coordinator's button or on the study's schedule."""
