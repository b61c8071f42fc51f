"""A drill-down list's filters, read from and written to the query string.

Every figure that links to its instances builds one of these; the list page parses it back.
Unknown or malformed values are refused with a message (never a 500), so a bookmarked URL
either shows its list or says what is wrong with it.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any
from urllib.parse import urlencode

from django.http import QueryDict

SETS = ("", "dev", "test")
NA_POLICIES = ("category", "exclude")
DISAGREE = ("", "judge", "raters")
FLAGS = ("", "open", "any")
MISSING = ("", "judge", "consensus")
MAX_TEXT = 200


class QueryError(ValueError):
    """A filter value the list cannot use; the message says which and why."""


@dataclass(frozen=True)
class ListQuery:
    """The filters of one drill-down list (empty string or None: no filter on that field)."""

    run: int | None = None
    na: str = ""
    set: str = ""
    group: int | None = None
    item: str = ""
    judge: str = ""
    label: str = ""  # the judge's label
    human: str = ""  # the human consensus label
    rater: str = ""
    alt: bool = False  # instances of the alt-test's per-rater test: judge, rater and another rater labelled
    compared: bool = False  # a consensus and a label of the judge
    disagree: str = ""
    missing: str = ""  # "judge": a consensus the judge did not label; "consensus": a judge label without consensus
    provenance: str = ""
    chatbot: str = ""
    versus: str = ""  # a second chatbot: the conversations of both (a leaderboard pair)
    persona: str = ""
    flag: str = ""
    code: int | None = None  # a failure category
    coded: str = ""  # a failure code's text
    min_raters: int | None = None  # at least this many raters labelled the item (reliability's units)
    calibration: bool = False  # include the study's calibration conversations (the consensus page counts them)
    scored: bool = False  # only items that enter a checklist score (yes / no / N/A)
    with_consensus: bool = False  # a consensus was computed for the item (any provenance, even without a label)
    about: str = ""  # codes about this judge ("(raters)": about the raters' disagreement)

    @classmethod
    def parse(cls, params: QueryDict | dict[str, str]) -> ListQuery:
        """Return the filters of a query string; raise QueryError naming a bad value."""
        get = params.get
        values: dict[str, Any] = {}
        for name in ("run", "group", "code", "min_raters"):
            raw = (get(name) or "").strip()
            if raw:
                if not raw.isdigit() or len(raw) > 9:
                    raise QueryError(f"{name} must be a whole number, not {raw[:40]!r}")
                values[name] = int(raw)
        for name in ("item", "judge", "label", "human", "rater", "provenance", "chatbot", "versus", "persona", "coded", "about"):
            raw = (get(name) or "").strip()
            if len(raw) > MAX_TEXT:
                raise QueryError(f"{name} is longer than {MAX_TEXT} characters")
            values[name] = raw
        for name, allowed in (("na", ("", *NA_POLICIES)), ("set", SETS), ("disagree", DISAGREE), ("flag", FLAGS), ("missing", MISSING)):
            raw = (get(name) or "").strip()
            if raw not in allowed:
                raise QueryError(f"{name} must be one of {', '.join(a for a in allowed if a)}, not {raw[:40]!r}")
            values[name] = raw
        for name in ("alt", "compared", "calibration", "scored", "with_consensus"):
            values[name] = (get(name) or "") in ("1", "true", "yes")
        query = cls(**values)
        if (query.label or query.compared or query.alt or query.missing) and not query.judge:
            raise QueryError("a judge's label, 'compared' or the alt-test instances need a judge (judge=...)")
        if query.judge and query.run is None:
            raise QueryError("a judge's labels need the judge run (run=...)")
        if query.alt and not query.rater:
            raise QueryError("the alt-test instances are those of one left-out rater (rater=...)")
        return query

    def params_dict(self) -> dict[str, Any]:
        """Return the fields as keyword arguments (to build a narrower query)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def params(self, **changes: Any) -> dict[str, str]:
        """Return the non-empty filters as query-string parameters (with ``changes`` applied)."""
        query = replace(self, **changes) if changes else self
        out: dict[str, str] = {}
        for f in fields(query):
            value = getattr(query, f.name)
            if value is None or value == "" or value is False:
                continue
            out[f.name] = "1" if value is True else str(value)
        return out

    def querystring(self, **changes: Any) -> str:
        return urlencode(self.params(**changes))
