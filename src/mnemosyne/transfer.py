"""Lossless JSON Lines export and import.

The first line is a header naming the format; every other line is one memory with
all its fields (ids, sessions, scopes, timestamps, metadata, status). Importing the
same file twice adds nothing the second time: memories are matched by id.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .core.fingerprint import content_hash
from .core.timeutil import optional_timestamp, to_timestamp
from .core.validation import check_content, check_importance, check_label, check_metadata, check_scope
from .errors import InvalidInputError
from .models import KINDS, STATUSES, Memory
from .storage.base import NewMemory

FORMAT = "mnemosyne-jsonl"
VERSION = 1
_REQUIRED = ("id", "content", "source", "importance", "scope", "session_id", "created_at", "recorded_at")


def write_jsonl(memories: Iterator[Memory], path: Path) -> int:
    """Write a header and one line per memory to ``path`` atomically; return the count."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    count = 0
    try:
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(json.dumps({"format": FORMAT, "version": VERSION}) + "\n")
            for memory in memories:
                record = memory.to_dict()
                for transient in ("score", "explanation", "access_count"):
                    record.pop(transient, None)
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
                count += 1
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return count


def read_jsonl(path: Path) -> list[NewMemory]:
    """Parse and validate a whole export before anything is written."""
    if not path.is_file():
        raise InvalidInputError(f"there is no file at {path} to import")
    memories = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError as exc:
                raise InvalidInputError(f"{path}:{number} is not valid JSON: {exc}") from exc
            if number == 1 and isinstance(record, dict) and record.get("format") == FORMAT:
                if record.get("version") != VERSION:
                    raise InvalidInputError(
                        f"{path} is export format version {record.get('version')}; this "
                        f"Mnemosyne reads version {VERSION}; upgrade Mnemosyne"
                    )
                continue
            try:
                memories.append(_to_new_memory(record))
            except InvalidInputError as exc:
                raise InvalidInputError(f"{path}:{number}: {exc}") from exc
    return memories


def _to_new_memory(record: Any) -> NewMemory:
    if not isinstance(record, dict):
        raise InvalidInputError("each line must be a JSON object")
    missing = [key for key in _REQUIRED if key not in record]
    if missing:
        raise InvalidInputError(f"missing fields {missing}")
    content = check_content(record["content"])
    kind = record.get("kind", "episodic")
    status = record.get("status", "active")
    if kind not in KINDS or status not in STATUSES:
        raise InvalidInputError(f"unknown kind {kind!r} or status {status!r}")
    return NewMemory(
        id=check_label(record["id"], "id"),
        session_id=check_label(record["session_id"], "session_id"),
        scope=check_scope(record["scope"]),
        content=content,
        content_hash=content_hash(content),
        source=check_label(record["source"], "source"),
        importance=check_importance(record["importance"]),
        metadata=check_metadata(record.get("metadata")),
        created_at=to_timestamp(record["created_at"], "created_at"),
        recorded_at=to_timestamp(record["recorded_at"], "recorded_at"),
        valid_until=optional_timestamp(record.get("valid_until"), "valid_until"),
        kind=kind,
        status=status,
    )
