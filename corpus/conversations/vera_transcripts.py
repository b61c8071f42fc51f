"""Read VERA-MH transcript files, their file names and their run-folder names. Pure Python.

Transcript: blocks that start with a role marker at the beginning of a line, ``user:`` for
the simulated user and ``agent:`` or ``chatbot:`` (later versions) for the chatbot, roles
normalised to "user" / "assistant". A message runs until the next block's marker and may span
several lines and paragraphs: blank lines inside a message are content. A block starts at the
first line of the file or after a blank line; a line there that looks like a role marker
(a lowercase word, a colon, then a space or the line end) must be a known one. A known marker
elsewhere (directly under a content line) is reported rather than silently merged.
An empty or whitespace-only chatbot block is kept as an empty message (real transcripts
have them); an empty user block is an error with its line.

File name: ``<id>_<Persona>_<model>_run<k>.txt``. The id (hexadecimal) is the first
``_``-separated token, the run the last, the persona the second (VERA-MH persona names are
single words; VERA-MH's own tools read them the same way) and the model everything between,
so model names may contain ``_`` and ``-``. Pass ``personas`` to recognise multi-token names.

Run folder: ``p_<user model>__a_<chatbot model>__t<turns>__r<runs>__<timestamp>``; model
names may contain single underscores, not ``__``. The timestamp is kept as written.

Errors raise ``VeraFormatError`` (an ``ImportRejected`` that is also a ``ValueError``) with
every problem found, each naming the file and, in transcripts, the line.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import NamedTuple

from core.problems import ImportRejected, Problem

ROLE_MARKERS: dict[str, str] = {"user": "user", "agent": "assistant", "chatbot": "assistant"}
_MARKER = re.compile(r"^([a-z][a-z_-]*):(?: |$)")
_HEX = re.compile(r"^[0-9a-fA-F]+$")
_RUN = re.compile(r"^run(\d+)$")
_FOLDER = re.compile(
    r"^p_(?P<user>.+?)__a_(?P<chatbot>.+?)__t(?P<turns>\d+)__r(?P<runs>\d+)__(?P<timestamp>.+)$"
)


class VeraFormatError(ImportRejected, ValueError):
    """Raised when a transcript, file name or folder name does not follow the VERA-MH format."""

    def __str__(self) -> str:
        return "; ".join(p.message for p in self.problems)


class TranscriptName(NamedTuple):
    """The parts of ``<id>_<Persona>_<model>_run<k>.txt``."""

    conv_id: str
    persona: str
    model: str
    run: int


@dataclass(frozen=True)
class RunFolder:
    """The parts of ``p_<user model>__a_<chatbot>__t<turns>__r<runs>__<timestamp>``."""

    user_model: str
    chatbot_model: str
    turns: int
    runs: int
    timestamp: str


def parse_transcript(text: str, file: str) -> list[tuple[str, str]]:
    """Return the (role, content) messages of a transcript; raise VeraFormatError on any defect."""
    lines = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n").split("\n")
    problems: list[Problem] = []
    messages: list[tuple[str, str]] = []
    current: tuple[str, int, list[str]] | None = None  # role, line of its marker, content lines

    def close() -> None:
        if current is None:
            return
        role, line, body = current
        content = "\n".join(body).strip()
        if content or role == "assistant":
            # An empty chatbot reply is data (the chatbot sent nothing): kept as an empty message.
            messages.append((role, content))
        else:
            problems.append(Problem(f"the {role} message is empty", file, line))

    previous_blank = True
    for number, line in enumerate(lines, start=1):
        match = _MARKER.match(line)
        word = match.group(1) if match else None
        if word in ROLE_MARKERS and not previous_blank:
            problems.append(
                Problem(f"role marker '{word}:' must follow a blank line", file, number)
            )
        if match and previous_blank and word not in ROLE_MARKERS:
            known = ", ".join(f"{m}:" for m in ROLE_MARKERS)
            problems.append(
                Problem(f"unknown role marker '{word}:'; expected {known}", file, number)
            )
            if current is None:
                break
        elif match and previous_blank:
            close()
            current = (ROLE_MARKERS[word or ""], number, [line[match.end() :]])
        elif current is None and line.strip():
            problems.append(
                Problem(
                    "the transcript must start with a role marker (user:, agent: or chatbot:)",
                    file,
                    number,
                )
            )
            break
        elif current is not None:
            current[2].append(line)
        previous_blank = not line.strip()
    close()
    if not messages and not problems:
        problems.append(Problem("the transcript has no messages", file, 1))
    if problems:
        raise VeraFormatError(problems)
    return messages


def parse_transcript_filename(name: str, personas: Collection[str] | None = None) -> TranscriptName:
    """Split ``<id>_<Persona>_<model>_run<k>.txt`` into its parts; raise VeraFormatError if it is not one.

    With ``personas`` (known persona names), the longest known name that the tokens after
    the id spell out is taken, so names with underscores are recognised.
    """
    expected = "expected <id>_<Persona>_<model>_run<k>.txt"
    stem = name.rsplit("/", 1)[-1]
    if not stem.lower().endswith(".txt"):
        raise _name_error(f"'{stem}' is not a .txt transcript; {expected}", name)
    tokens = stem[: -len(".txt")].split("_")
    if len(tokens) < 4 or not all(tokens):
        raise _name_error(f"'{stem}' does not have four non-empty parts; {expected}", name)
    conv_id, middle, last = tokens[0], tokens[1:-1], tokens[-1]
    run = _RUN.match(last)
    problems = []
    if not _HEX.match(conv_id):
        problems.append(f"the id '{conv_id}' is not hexadecimal")
    if run is None:
        problems.append(f"'{last}' is not run<k>")
    persona_tokens = 1
    for size in range(len(middle) - 1, 1, -1):
        if personas and "_".join(middle[:size]) in personas:
            persona_tokens = size
            break
    if problems:
        raise _name_error(f"'{stem}': {'; '.join(problems)}; {expected}", name)
    assert run is not None
    return TranscriptName(
        conv_id,
        "_".join(middle[:persona_tokens]),
        "_".join(middle[persona_tokens:]),
        int(run.group(1)),
    )


def parse_run_folder(name: str) -> RunFolder:
    """Split a run-folder name into models, turns, runs and timestamp; raise VeraFormatError if it is not one."""
    folder = name.rstrip("/").rsplit("/", 1)[-1]
    match = _FOLDER.match(folder)
    if match is None:
        raise _name_error(
            f"'{folder}' is not a run folder; expected "
            "p_<user model>__a_<chatbot model>__t<turns>__r<runs>__<timestamp>",
            name,
        )
    turns, runs = int(match["turns"]), int(match["runs"])
    if turns < 1 or runs < 1:
        raise _name_error(f"'{folder}': turns and runs must be at least 1", name)
    return RunFolder(match["user"], match["chatbot"], turns, runs, match["timestamp"])


def _name_error(message: str, name: str) -> VeraFormatError:
    return VeraFormatError([Problem(message, name)])


# Writing the published layout (the publication bundle): the inverse of the readers above.
_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9.-]+")
_MODEL_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def transcript_text(messages: Collection[tuple[str, str]]) -> str:
    """Return a transcript in VERA-MH's layout: ``user:`` / ``agent:`` blocks separated by blank lines.

    System messages have no marker in the layout and are left out; ``parse_transcript`` reads
    the text back to the same user and chatbot messages (content stripped, as it reads them).
    """
    blocks = [f"{'user' if role == 'user' else 'agent'}: {content.strip()}".rstrip()
              for role, content in messages if role in ("user", "assistant")]
    return "\n\n".join(blocks) + "\n"


def name_token(text: str, fallback: str) -> str:
    """Return ``text`` as one file-name token: no ``_``, ``/`` or spaces (VERA-MH splits names on ``_``)."""
    token = _NAME_UNSAFE.sub("-", text.strip()).strip("-")
    return token or fallback


def model_token(text: str, fallback: str = "unknown") -> str:
    """Return a model name as the file-name and folder token VERA-MH writes: single ``_`` kept, no ``__``.

    The readers take the model as everything between the persona and ``run<k>`` (file) or
    between ``p_``/``__a_``/``__t`` (folder), so single underscores survive (``gpt_4o_mini``);
    characters outside ``[A-Za-z0-9._-]`` become ``-`` and a trailing dot is dropped, so the name
    is portable to every common file system.
    """
    token = re.sub(r"_{2,}", "_", _MODEL_UNSAFE.sub("-", text.strip())).strip("-_").rstrip(".")
    return token or fallback


def transcript_filename(conv_id: str, persona: str, model: str, run: int) -> str:
    """Return ``<id>_<Persona>_<model>_run<k>.txt``; ``conv_id`` must be hexadecimal, as in the published files.

    ``model`` is the persona's (user-agent's) model, as VERA-MH writes it; ``run`` counts from 1.
    ``parse_transcript_filename`` reads the name back to the same parts.
    """
    if not _HEX.match(conv_id):
        raise ValueError(f"transcript id {conv_id!r} is not hexadecimal")
    return f"{conv_id}_{name_token(persona, 'Unknown')}_{model_token(model)}_run{run}.txt"


def run_folder_name(user_model: str, chatbot_model: str, turns: int, runs: int, timestamp: str) -> str:
    """Return ``p_<user model>__a_<chatbot model>__t<turns>__r<runs>__<timestamp>`` (names made safe).

    ``turns`` is the maximum number of messages (VERA-MH's ``max_turns``: each speaker's message
    is a turn), ``runs`` the runs per persona. ``parse_run_folder`` reads it back to the same parts.
    """
    stamp = _MODEL_UNSAFE.sub("-", timestamp.strip()).strip("-").rstrip(".") or "0"
    return f"p_{model_token(user_model)}__a_{model_token(chatbot_model)}__t{turns}__r{runs}__{stamp}"
