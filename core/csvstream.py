"""Stream CSV text in chunks, so a large export never sits in memory whole."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator, Sequence


def stream_csv(header: Sequence[object], rows: Iterable[Sequence[object]], *, chunk: int = 200) -> Iterator[str]:
    """Yield the header line, then the rows ``chunk`` at a time, as CSV text."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)

    def flush() -> str:
        value = buffer.getvalue()
        buffer.seek(0)
        buffer.truncate(0)
        return value

    writer.writerow(header)
    yield flush()
    for n, row in enumerate(rows, start=1):
        writer.writerow(row)
        if n % chunk == 0:
            yield flush()
    yield flush()
