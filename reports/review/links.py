"""Links from a report's figures to the instances behind them (``reports:instances`` URLs).

Each function adds ``link``/``links`` entries to a copy of a report payload for its template;
the cached payload itself is never changed.
"""

from __future__ import annotations

import copy
from typing import Any

from django.urls import reverse

from reports.review.query import ListQuery


def _url(study_pk: int, query: ListQuery) -> str:
    return f"{reverse('reports:instances', args=[study_pk])}?{query.querystring()}"


def _matrix_links(study_pk: int, base: ListQuery, judge: str, matrix: dict[str, Any]) -> list[list[str]]:
    labels = matrix.get("labels") or []
    return [[_url(study_pk, ListQuery(**{**base.params_dict(), "judge": judge, "human": h, "label": j})) for j in labels]
            for h in labels]


def judges_links(data: dict[str, Any] | None, *, study_pk: int, run_id: int, na: str) -> dict[str, Any] | None:
    """Return the judges-vs-humans payload with a link behind every count that has instances.

    Confusion-matrix cells (pooled per label group and per item), each comparison's "compared"
    count, each per-rater row of the alt-test (pooled and per item) and each judge's alt-test
    instance count.
    """
    if not data or data.get("pending") or not data.get("groups"):
        return data
    data = copy.deepcopy(data)
    part = "dev" if data.get("holdout") else ""
    for index, group in enumerate(data["groups"]):
        base = ListQuery(run=run_id, na=na, set=part, group=index)
        for c in group.get("vs_consensus", []):
            c["matrix"]["links"] = _matrix_links(study_pk, base, str(c["rater"]), c["matrix"])
            c["link"] = _url(study_pk, ListQuery(**{**base.params_dict(), "judge": str(c["rater"]), "compared": True}))
            c["disagree_link"] = _url(study_pk, ListQuery(**{**base.params_dict(), "judge": str(c["rater"]), "disagree": "judge"}))
            c["judge_missing_link"] = _url(study_pk, ListQuery(**{**base.params_dict(), "judge": str(c["rater"]), "missing": "judge"}))
            c["no_consensus_link"] = _url(study_pk, ListQuery(**{**base.params_dict(), "judge": str(c["rater"]),
                                                                  "missing": "consensus"}))
        for key, comps in group.get("per_item", {}).items():
            item_base = ListQuery(run=run_id, na=na, set=part, item=key)
            for c in comps:
                c["matrix"]["links"] = _matrix_links(study_pk, item_base, str(c["rater"]), c["matrix"])
                c["link"] = _url(study_pk, ListQuery(**{**item_base.params_dict(), "judge": str(c["rater"]), "compared": True}))
        for judge, test in (group.get("alt_test") or {}).items():
            for r in test.get("per_rater", []):
                r["link"] = _url(study_pk, ListQuery(**{**base.params_dict(), "judge": judge, "rater": str(r["rater"]), "alt": True}))
            for item, t in (test.get("items") or {}).items():
                for r in t.get("per_rater", []):
                    r["link"] = _url(study_pk, ListQuery(run=run_id, na=na, set=part, item=item, judge=judge,
                                                         rater=str(r["rater"]), alt=True))
    return data
