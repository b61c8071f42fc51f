"""Active sampling for human review (Zrnic & Candès, "Active Statistical Inference", ICML 2024).

A coordinator builds a study from a judge run and asks for the next batch of conversations
for the clinicians, batch by batch: each conversation the batch visits is rated with a
probability that grows with the judges' uncertainty about it, never below a floor, and every
probability is recorded, so the estimate (:mod:`stats.active`) stays unbiased. Reads in
``selectors``, writes in ``services``, the pages, API and URLs beside them.
"""
