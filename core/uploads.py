"""Turn an uploaded file, a zip archive, or a path on disk into (relative path, text) pairs."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import IO

from core.problems import ImportRejected, Problem

MAX_FILES = 20_000


def _decode(data: bytes, name: str) -> str:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ImportRejected([Problem("the file is not UTF-8 text", name, line)]) from exc
    return text


def read_upload(name: str, stream: IO[bytes]) -> list[tuple[str, str]]:
    """Read an uploaded file; a ``.zip`` yields each text file inside it."""
    data = stream.read()
    if name.lower().endswith(".zip"):
        try:
            archive = zipfile.ZipFile(io.BytesIO(data))
        except zipfile.BadZipFile as exc:
            raise ImportRejected([Problem("not a valid zip archive", name)]) from exc
        files = []
        problems = []
        for info in archive.infolist():
            if info.is_dir() or "__MACOSX" in info.filename:
                continue
            if len(files) >= MAX_FILES:
                raise ImportRejected([Problem(f"more than {MAX_FILES} files in the archive", name)])
            try:
                files.append((info.filename, _decode(archive.read(info), info.filename)))
            except ImportRejected as exc:
                problems.extend(exc.problems)
        if problems:
            raise ImportRejected(problems)
        return files
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
    problems = []
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        rel = file.relative_to(path.parent).as_posix()
        try:
            files.append((rel, _decode(file.read_bytes(), rel)))
        except ImportRejected as exc:
            problems.extend(exc.problems)
    if problems:
        raise ImportRejected(problems)
    return files
