"""The publication bundle: one download per study that a fresh evalsite rebuilds, figure for figure.

``export`` writes it (the study zip's files, transcripts in evalsite JSONL and VERA-MH's layout,
instrument and persona files, ratings long and in VERA-MH's layout, judge labels, the study's
design, every figure as data and plotly JSON, a codebook and a manifest with SHA-256 checksums
and the app version); ``importer`` rebuilds the study from it, all or nothing; ``figures``
computes every figure of a study and compares two sets of figures. ``docs/formats.md``,
"Publication bundle", describes the layout.
"""
