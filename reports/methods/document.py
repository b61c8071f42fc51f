"""METHODS.md: the methods paragraphs of a study's reports in one document, references merged."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from reports.methods.references import sort_key


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
