"""From a figure to the evidence behind it: drill-down lists, the review page, failure codes.

``query`` parses a list's filters from the query string (so a list is a URL that can be
shared); ``instances`` builds the (conversation, item) instances of a study from the same
inputs the figures are computed from (``reports.comparison.comparison_inputs`` for judges
against humans), so a list holds exactly the instances a figure counts; ``scope`` applies the
test-set lock; ``conversation`` gathers one conversation's transcript, every clinician's and
judge's answers for the review page; ``codes`` holds failure codes (open and axial coding).
"""
