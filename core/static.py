"""Static files as production serves them, in every mode (issue 32).

Hashed names (cached for a year, immutable) and precompressed copies (gzip, and brotli when the
``brotli`` package is installed) come from whitenoise's manifest storage. Compressing the plotly
bundles with brotli takes most of a collectstatic (about 15 s of CPU); a hashed name says what
its content is, so a hashed file that already has its compressed copies (whole: they are read
back) is not compressed again, and `manage.py serve` (make run) collects at every start in
about 2 s.
"""

from __future__ import annotations

import gzip
import os
from collections.abc import Iterable, Iterator

from whitenoise.compress import brotli_installed
from whitenoise.storage import CompressedManifestStaticFilesStorage

if brotli_installed:
    import brotli

    brotli_error: type[Exception] = brotli.error
else:  # pragma: no cover - brotli is a dependency (whitenoise[brotli])
    brotli_error = ValueError


class StaticStorage(CompressedManifestStaticFilesStorage):
    """Whitenoise's compressed manifest storage that keeps the compressed copies of unchanged files."""

    def compress_files(self, paths: Iterable[str]) -> Iterator[tuple[str, str]]:
        # Only a hashed name fixes the content: an unhashed file may have changed in place.
        hashed = {self.clean_name(name) for name in self.hashed_files.values()}
        todo = [path for path in paths if not (self.clean_name(path) in hashed and self._compressed(path))]
        yield from super().compress_files(todo)

    def _compressed(self, path: str) -> bool:
        """Whether every compressed copy of ``path`` exists whole (a copy cut short by a kill is redone)."""
        full = self.path(path)
        size = os.path.getsize(full)
        readers = [(".gz", gzip.decompress)]
        if brotli_installed:
            readers.append((".br", brotli.decompress))
        for suffix, decompress in readers:
            try:
                with open(full + suffix, "rb") as copy:
                    if len(decompress(copy.read())) != size:
                        return False
            except (OSError, ValueError, EOFError, brotli_error):
                return False
        return True
