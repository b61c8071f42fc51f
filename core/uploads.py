"""Turn an uploaded file, a zip archive, or a path on disk into (relative path, text) pairs, bounded.

Limits (settings, from the environment; see ``.env.example``):

- ``EVALSITE_MAX_UPLOAD_BYTES``: the largest upload. ``UploadLimitMiddleware`` answers 413 before
  reading a body announced as larger, and ``LimitedUploadHandler`` counts the bytes while they
  stream in, so an oversized upload never reaches memory or disk. A file inside a zip and a file
  read from disk may not be larger either.
- ``EVALSITE_MAX_UNZIPPED_BYTES``: the most a zip may expand to, all members together.
- ``EVALSITE_MAX_ZIP_RATIO``: the largest compression ratio of a member (a zip bomb's is huge).
  Declared sizes are checked first, then the actual bytes while decompressing (a zip can lie).
- ``EVALSITE_MAX_IMPORT_ROWS``: the most lines one file may hold.
"""

from __future__ import annotations

import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from django.conf import settings
from django.core.files.uploadhandler import FileUploadHandler

from core.problems import ImportRejected, Problem, ProblemList

MAX_FILES = 20_000
CHUNK = 64 * 1024


def max_upload_bytes() -> int:
    return int(getattr(settings, "EVALSITE_MAX_UPLOAD_BYTES", 50 * 1024 * 1024))


def max_unzipped_bytes() -> int:
    return int(getattr(settings, "EVALSITE_MAX_UNZIPPED_BYTES", 100 * 1024 * 1024))


def max_zip_ratio() -> float:
    return float(getattr(settings, "EVALSITE_MAX_ZIP_RATIO", 100))


def max_rows() -> int:
    return int(getattr(settings, "EVALSITE_MAX_IMPORT_ROWS", 500_000))


def human_bytes(n: int) -> str:
    """Return ``n`` bytes as people say it: "50 MB", "1.5 GB", "512 bytes"."""
    for unit, size in (("GB", 1024**3), ("MB", 1024**2), ("KB", 1024)):
        if n >= size:
            value = n / size
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{n} bytes"


class UploadTooLarge(Exception):
    """An upload larger than ``EVALSITE_MAX_UPLOAD_BYTES``: answered 413, naming the limit."""

    def __init__(self, limit: int):
        self.limit = limit
        super().__init__(
            f"The upload is larger than the limit of {human_bytes(limit)}. Split the file (a zip of "
            f"smaller files works for conversations), or ask an administrator to raise EVALSITE_MAX_UPLOAD_BYTES."
        )


class LimitedUploadHandler(FileUploadHandler):
    """Count each uploaded file's bytes as they stream in; stop past the limit."""

    def new_file(self, *args: Any, **kwargs: Any) -> None:
        super().new_file(*args, **kwargs)
        self.received = 0

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes:
        self.received += len(raw_data)
        if self.received > max_upload_bytes():
            raise UploadTooLarge(max_upload_bytes())
        return raw_data  # the next handler (memory or temporary file) stores it

    def file_complete(self, file_size: int) -> None:
        return None


def _decode(data: bytes, name: str) -> str:
    _check_rows(data, name)  # on the bytes: a file refused for its length is never decoded
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ImportRejected([Problem("the file is not UTF-8 text", name, line)]) from exc
    return text


def _check_rows(data: bytes, name: str) -> None:
    # Counting newlines is cheap and bounds every importer (a CSV row spans at least one line).
    limit = max_rows()
    lines = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
    if lines > limit:
        raise ImportRejected([Problem(
            f"the file has {lines:,} lines; at most {limit:,} are accepted in one file "
            "(split it, or ask an administrator to raise EVALSITE_MAX_IMPORT_ROWS)", name, limit + 1,
        )])


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, budget: int) -> bytes:
    """Decompress one member chunk by chunk, stopping as soon as it exceeds what it may be."""
    cap = min(max_upload_bytes(), budget, info.file_size)
    parts: list[bytes] = []
    size = 0
    with archive.open(info) as member:
        while chunk := member.read(CHUNK):
            size += len(chunk)
            if size > cap:
                raise ImportRejected([Problem(
                    f"the member expands beyond its declared size or the limits "
                    f"({human_bytes(max_upload_bytes())} per file, {human_bytes(max_unzipped_bytes())} in all)",
                    info.filename,
                )])
            parts.append(chunk)
    return b"".join(parts)


def _read_zip(name: str, stream: IO[bytes]) -> list[tuple[str, str]]:
    return [(member, data) for member, data in read_zip_files(name, stream) if isinstance(data, str)]


def read_zip_files(name: str, stream: IO[bytes], *, binary: Callable[[str], bool] = lambda member: False) -> list[tuple[str, str | bytes]]:
    """Read a zip archive within the limits: each member as text, or as bytes where ``binary(member name)`` says so.

    A binary member (a chart image of a publication bundle) is bounded like any other but never
    decoded nor counted in lines; every other member must be UTF-8 text.
    """
    try:
        archive = zipfile.ZipFile(stream)
    except zipfile.BadZipFile as exc:
        raise ImportRejected([Problem("not a valid zip archive", name)]) from exc
    members = [i for i in archive.infolist() if not i.is_dir() and "__MACOSX" not in i.filename]
    if len(members) > MAX_FILES:
        raise ImportRejected([Problem(f"more than {MAX_FILES} files in the archive", name)])
    per_file, total, ratio = max_upload_bytes(), max_unzipped_bytes(), max_zip_ratio()
    problems = ProblemList()
    # Declared sizes first: refuse a bomb before decompressing a single byte of it.
    for info in members:
        if info.file_size > per_file:
            problems.append(Problem(f"{human_bytes(info.file_size)} unpacked, more than the limit of {human_bytes(per_file)} per file", info.filename))
        elif info.file_size > 1024 * 1024 and info.file_size > ratio * max(info.compress_size, 1):
            problems.append(Problem(
                f"compressed {info.file_size / max(info.compress_size, 1):,.0f} to 1, more than the {ratio:g} to 1 "
                "a text file needs (a zip bomb?)", info.filename,
            ))
    declared = sum(i.file_size for i in members)
    if declared > total:
        problems.append(Problem(f"the archive unpacks to {human_bytes(declared)}, more than the limit of {human_bytes(total)}", name))
    if problems:
        raise ImportRejected(problems)
    files: list[tuple[str, str | bytes]] = []
    budget = total
    for info in members:
        try:
            data = _read_member(archive, info, budget)
            budget -= len(data)
            files.append((info.filename, data if binary(info.filename) else _decode(data, info.filename)))
        except ImportRejected as exc:
            problems.extend(exc.problems)
        except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError) as exc:
            problems.append(Problem(f"the member cannot be unpacked ({exc})", info.filename))
    if problems:
        raise ImportRejected(problems)
    return files


def read_upload(name: str, stream: IO[bytes]) -> list[tuple[str, str]]:
    """Read an uploaded file; a ``.zip`` yields each text file inside it."""
    if name.lower().endswith(".zip"):
        return _read_zip(name, stream)
    data = stream.read(max_upload_bytes() + 1)
    if len(data) > max_upload_bytes():
        raise ImportRejected([Problem(f"the file is larger than the limit of {human_bytes(max_upload_bytes())}", name)])
    return [(name, _decode(data, name))]


def read_path(path: str | Path) -> list[tuple[str, str]]:
    """Read a file, or every file under a folder (paths relative to the folder's parent)."""
    path = Path(path)
    if not path.exists():
        raise ImportRejected([Problem("no such file or folder", str(path))])
    if path.is_file():
        with path.open("rb") as fh:
            return read_upload(path.name, fh)
    files = []
    problems = ProblemList()
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        rel = file.relative_to(path.parent).as_posix()
        try:
            if file.stat().st_size > max_upload_bytes():
                raise ImportRejected([Problem(f"the file is larger than the limit of {human_bytes(max_upload_bytes())}", rel)])
            files.append((rel, _decode(file.read_bytes(), rel)))
        except ImportRejected as exc:
            problems.extend(exc.problems)
    if problems:
        raise ImportRejected(problems)
    return files
