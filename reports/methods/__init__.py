"""Methods paragraphs: what each report computed, ready to paste into a paper.

Every report kind registered with :mod:`reports.jobs` has a writer here that turns the
report's computed payload into a paragraph: units, raters, items, coefficients as the
literature names them with their level of measurement, the N/A policy, the interval method
with its resamples, seed and confidence, the alt-test's epsilon and q, the PPI variant, the
weights, the model fitted, and the software versions, with a short reference list. Writers
read the payload only (never settings or defaults that could disagree with it) and never
name a chatbot, a model, a provider, a judge or a rater: they count them.

``reports.jobs`` calls :func:`attach` when it computes a report, so the paragraph is cached
with the figures under the payload's ``methods`` key: ``text``, ``references`` (structured:
``key``, ``cite``, ``citation``, ``doi``/``url``), ``software`` and ``title``. Pages show it
with ``{% include "reports/_methods.html" with methods=data.methods %}``; the study zip
gathers the study's paragraphs in METHODS.md (:func:`markdown`).

Adding a report kind (``jobs.register("my-kind", ...)``) takes one step more:

1. write ``reports/methods/my_kind.py`` with a function decorated ``@writes("my-kind")`` that
   takes ``(payload, params)`` and returns :class:`Methods` (title, text, reference keys;
   new works go into ``references.py``). If the paragraph needs a fact the payload lacks
   (the instrument, the consensus rule, the panel of judges), put it into the payload where
   the report is computed (``facts.py`` has helpers), never read it in the writer;
2. import the module below;
3. include ``reports/_methods.html`` in the page, and add the kind to the study zip in
   ``reports.services.study_methods`` if it belongs to a study;
4. add a case to ``tests/reports/test_methods.py`` (a test fails for a registered kind
   without a writer).
"""

from __future__ import annotations

from reports.methods import (  # noqa: F401 - each module registers its writer
    drift,
    evidence,
    judge_assisted,
    judges,
    leaderboard,
    raters,
    realism,
    regression,
    reliability,
    scorecards,
)
from reports.methods.base import WRITERS, Methods, attach, writes
from reports.methods.document import markdown

__all__ = ["WRITERS", "Methods", "attach", "markdown", "writes"]
