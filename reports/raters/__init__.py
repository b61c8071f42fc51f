"""Rater drift and load: agreement with consensus and time per conversation by queue position."""
