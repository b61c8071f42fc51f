"""Read conversation files into plain records, with a problem for every defect. Pure Python.

Formats (see ``docs/formats.md``): the project's JSONL (one conversation per line) and folders
of VERA-MH transcripts (``<id>_<Persona>_<model>_run<k>.txt`` inside a run folder named
``p_<user model>__a_<chatbot>__t<turns>__r<runs>__<timestamp>``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from core.bounded import TooComplex, json_loads
from core.problems import Problem

ROLES = ("user", "assistant", "system")
JSONL_FIELDS = {"id", "persona", "persona_set", "target", "messages", "metadata", "run_index", "sensitive"}


@dataclass
class ConversationRecord:
    external_id: str
    messages: list[tuple[str, str]]
    file: str
    line: int | None
    persona: str | None = None
    persona_set: str | None = None
    persona_name: str | None = None
    target_model: str | None = None
    target_code: str | None = None
    target_name: str | None = None
    run_index: int | None = None
    sensitive: bool | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def content_hash(self) -> str:
        """Return the identity of a conversation: who spoke to which chatbot, and every message."""
        payload = {
            "persona": self.persona or self.persona_name or "",
            "target": self.target_model or self.target_code or "",
            "messages": [[r, c] for r, c in self.messages],
        }
        blob = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def read_jsonl(text: str, file: str) -> tuple[list[ConversationRecord], list[Problem]]:
    """Parse the project's JSONL conversation format; blank lines are allowed."""
    records: list[ConversationRecord] = []
    problems: list[Problem] = []
    seen_ids: dict[str, int] = {}
    for line_no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json_loads(line)
        except json.JSONDecodeError as exc:
            problems.append(Problem(f"not valid JSON: {exc.msg} (character {exc.colno})", file, line_no))
            continue
        except TooComplex as exc:
            problems.append(Problem(str(exc), file, line_no))
            continue
        if not isinstance(obj, dict):
            problems.append(Problem("each line must be a JSON object", file, line_no))
            continue
        before = len(problems)
        unknown = sorted(set(obj) - JSONL_FIELDS)
        for name in unknown:
            problems.append(Problem(f"unknown field '{name}'", file, line_no, name))
        conv_id = obj.get("id")
        if not isinstance(conv_id, str | int) or str(conv_id).strip() == "":
            problems.append(Problem("'id' is required (text)", file, line_no, "id"))
            conv_id = ""
        conv_id = str(conv_id).strip()
        if conv_id and conv_id in seen_ids:
            problems.append(
                Problem(f"id '{conv_id}' already used on line {seen_ids[conv_id]}", file, line_no, "id")
            )
        seen_ids.setdefault(conv_id, line_no)
        messages = _read_messages(obj.get("messages"), file, line_no, problems)
        persona = obj.get("persona")
        if persona is not None and not isinstance(persona, str):
            problems.append(Problem("'persona' must be a persona key (text) or null", file, line_no, "persona"))
            persona = None
        persona_set = obj.get("persona_set")
        if persona_set is not None and not isinstance(persona_set, str):
            problems.append(Problem("'persona_set' must be text", file, line_no, "persona_set"))
            persona_set = None
        target_model = target_code = target_name = None
        target = obj.get("target")
        if isinstance(target, str) and target.strip():
            target_model = target.strip()
        elif isinstance(target, dict):
            for name in sorted(set(target) - {"model", "code", "name"}):
                problems.append(Problem(f"unknown field '{name}'", file, line_no, f"target.{name}"))
            target_model = target.get("model")
            target_code = target.get("code")
            target_name = target.get("name")
            if not isinstance(target_model, str) or not target_model.strip():
                problems.append(Problem("'target.model' is required", file, line_no, "target.model"))
            if target_code is not None and not isinstance(target_code, str):
                problems.append(Problem("'target.code' must be text", file, line_no, "target.code"))
        elif target is not None:
            problems.append(Problem("'target' must be a model string or an object", file, line_no, "target"))
        metadata = obj.get("metadata", {})
        if metadata is None:
            metadata = {}
        if not isinstance(metadata, dict):
            problems.append(Problem("'metadata' must be an object", file, line_no, "metadata"))
            metadata = {}
        run_index = obj.get("run_index")
        if run_index is not None and (not isinstance(run_index, int) or isinstance(run_index, bool) or run_index < 0):
            problems.append(Problem("'run_index' must be a non-negative integer", file, line_no, "run_index"))
            run_index = None
        sensitive = obj.get("sensitive")
        if sensitive is not None and not isinstance(sensitive, bool):
            problems.append(Problem("'sensitive' must be true or false", file, line_no, "sensitive"))
            sensitive = None
        if len(problems) == before:
            records.append(
                ConversationRecord(
                    external_id=conv_id,
                    messages=messages,
                    file=file,
                    line=line_no,
                    persona=persona,
                    persona_set=persona_set,
                    target_model=target_model,
                    target_code=target_code,
                    target_name=target_name,
                    run_index=run_index,
                    sensitive=sensitive,
                    metadata=metadata,
                )
            )
    if not records and not problems:
        problems.append(Problem("the file holds no conversations", file))
    return records, problems


def _read_messages(raw: Any, file: str, line_no: int, problems: list[Problem]) -> list[tuple[str, str]]:
    if not isinstance(raw, list) or not raw:
        problems.append(Problem("'messages' must be a non-empty list", file, line_no, "messages"))
        return []
    messages: list[tuple[str, str]] = []
    for index, message in enumerate(raw):
        where = f"messages[{index}]"
        if not isinstance(message, dict):
            problems.append(Problem("each message must be an object with role and content", file, line_no, where))
            continue
        role = message.get("role")
        content = message.get("content")
        if role is None or role == "":
            problems.append(Problem("message has no 'role'", file, line_no, f"{where}.role"))
        elif role not in ROLES:
            problems.append(
                Problem(f"unknown role '{role}'; expected one of {', '.join(ROLES)}", file, line_no, f"{where}.role")
            )
        if not isinstance(content, str):
            problems.append(Problem("message has no 'content' text", file, line_no, f"{where}.content"))
        elif not content.strip() and role != "assistant":
            # An empty chatbot reply is data (kept, noted by the integrity checks); an empty
            # user or system message is an error.
            problems.append(Problem("message content is empty", file, line_no, f"{where}.content"))
        if isinstance(role, str) and role in ROLES and isinstance(content, str) and (content.strip() or role == "assistant"):
            messages.append((role, content if content.strip() else ""))
    return messages


def read_vera_files(files: Iterable[tuple[str, str]]) -> tuple[list[ConversationRecord], list[Problem]]:
    """Parse VERA-MH transcripts given as (relative path, text) pairs; other files are ignored."""
    from corpus.conversations.vera_transcripts import parse_run_folder, parse_transcript_filename

    records: list[ConversationRecord] = []
    problems: list[Problem] = []
    for relpath, text in sorted(files):
        path = PurePosixPath(relpath)
        if path.suffix.lower() != ".txt" or path.name.startswith("."):
            continue
        try:
            conv_id, persona_name, model, run = parse_transcript_filename(path.name)
        except ValueError as exc:
            problems.append(Problem(str(exc), relpath))
            continue
        folder = None
        if path.parent.name:
            try:
                folder = parse_run_folder(path.parent.name)
            except ValueError:
                folder = None
        parsed, file_problems = _parse_transcript_safely(text, relpath)
        problems.extend(file_problems)
        if file_problems:
            continue
        metadata: dict[str, Any] = {"format": "vera-mh", "file": path.name, "model_short": model}
        target_model = model
        if folder is not None:
            metadata.update(
                {
                    "run_folder": path.parent.name,
                    "user_model": folder.user_model,
                    "max_turns": folder.turns,
                    "runs_per_persona": folder.runs,
                    "timestamp": folder.timestamp,
                }
            )
            target_model = folder.chatbot_model or model
        records.append(
            ConversationRecord(
                external_id=conv_id,
                messages=parsed,
                file=relpath,
                line=None,
                persona_name=persona_name,
                target_model=target_model,
                run_index=run,
                metadata=metadata,
            )
        )
    if not records and not problems:
        problems.append(Problem("no VERA-MH transcripts (*.txt named <id>_<Persona>_<model>_run<k>.txt) found", ""))
    return records, problems


def _parse_transcript_safely(text: str, file: str) -> tuple[list[tuple[str, str]], list[Problem]]:
    from core.problems import ImportRejected
    from corpus.conversations.vera_transcripts import parse_transcript

    try:
        return list(parse_transcript(text, file)), []
    except ImportRejected as exc:
        return [], exc.problems
