"""METHODS.md: the methods paragraphs of a study's reports in one document, references merged."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from reports.methods.references import sort_key

_RUN_ID = re.compile(r"\b(run) #(\d+)\b", re.IGNORECASE)


def runs_by_place(text: str, places: Mapping[int, int]) -> str:
    """Return the text with each "run #ID" of a run in ``places`` written "run N", N its place (1 the oldest).

    A report page's paragraph names a judge run by its id (the page links to it); the publication
    bundle's METHODS.md names it by its place among the study's runs, as study.json and
    ``figures/judges_runN.json`` do, so the study rebuilt from its bundle in another database,
    where the runs have other ids, writes the same text (issue 31). An id not in ``places`` stays.
    """
    def place(match: re.Match[str]) -> str:
        pk = int(match.group(2))
        return f"{match.group(1)} {places[pk]}" if pk in places else match.group(0)

    return _RUN_ID.sub(place, text)


def markdown(title: str, sections: Sequence[tuple[str, dict[str, Any] | None]], *, missing: Sequence[str] = ()) -> str:
    """Return a Markdown document: one section per report (heading, paragraph), then every reference once.

    ``sections`` are (heading, the payload's ``methods``); a section without methods says so.
    ``missing`` lists reports left out, each with why, so the reader knows what the file lacks.
    """
    lines = [f"# {title}", "",
             "Each paragraph states what evalsite computed for one report, from that report's own figures: paste it into "
             "the methods section of a paper. The same text is on each report page and in its JSON (`methods`).", ""]
    references: dict[str, dict[str, str]] = {}
    for heading, methods in sections:
        lines += [f"## {heading}", ""]
        if not methods or not methods.get("text"):
            lines += [(methods or {}).get("error") or "No methods paragraph: the report has not been computed.", ""]
            continue
        lines += [paragraph for part in methods["text"].split("\n\n") for paragraph in (part.strip(), "")]
        for ref in methods.get("references") or []:
            references.setdefault(ref["key"], ref)
    if missing:
        lines += ["## Not included", "", *[f"- {why}" for why in missing], ""]
    if references:
        lines += ["## References", ""]
        for ref in sorted(references.values(), key=lambda r: sort_key(r["citation"])):
            link = f" https://doi.org/{ref['doi']}" if ref.get("doi") else (f" {ref['url']}" if ref.get("url") else "")
            lines.append(f"- {ref['citation']}{link}")
        lines.append("")
    return "\n".join(lines)


RUNS_BY_PLACE = ("Judge runs are numbered here by their place among the study's judge runs, oldest first (judge run 1 is "
                 "the oldest), as in the other files of the bundle; a report page names them by id.")


def document_by_place(document: str, places: Mapping[int, int]) -> str:
    """Return a METHODS.md (:func:`markdown`) with its judge runs named by place (:func:`runs_by_place`), saying so under its title."""
    if not places:
        return document
    title, _, rest = document.partition("\n\n")
    return runs_by_place(f"{title}\n\n{RUNS_BY_PLACE}\n\n{rest}", places)
