"""Lossless JSON Lines export and import.

An export is UTF-8 text, one JSON object per line. The first line is a header;
every other line has a ``type``: the explicit episodes first, then every memory
(all sessions, in id order), then the links sleep made between memories, then the
texts sleep must not share again, then the memories that were forgotten::

    {"format": "mnemosyne-jsonl", "version": 4}
    {"type": "episode", "id": "...", "session_id": "s", "label": "deploy v2",
     "started_at": "2026-01-01T09:00:00+00:00", "ended_at": "2026-01-01T09:40:00+00:00"}
    {"type": "memory", "id": "...", "session_id": "s", "scope": "session", "kind": "episodic",
     "status": "consolidated", "content": "...", "source": "conversation", "importance": 0.5,
     "metadata": {}, "created_at": "...", "recorded_at": "...", "valid_until": null,
     "episode_id": "...", "idempotency_key": null, "strength": 1.0, "occurrences": 1,
     "last_seen_at": null, "access_count": 0, "last_accessed_at": null}
    {"type": "link", "src_id": "...", "dst_id": "...", "kind": "summarises",
     "run_id": "...", "created_at": "..."}
    {"type": "unshared", "key": "9f86d0..."}
    {"type": "forgotten", "id": "...", "session_id": "s"}
    {"type": "end", "records": 5}

(each record is one line in the file). The end line counts the records before it:
a file cut short at a line boundary is valid line by line, and only its missing
end line tells. Times are ISO 8601 in UTC, to the
microsecond. A link says its ``src_id`` memory stands for its ``dst_id`` memory:
a summary ``summarises`` its sources, a kept copy ``merges`` its duplicates, a
newer fact ``supersedes`` an older one; ``forget`` follows them. ``access_count``
and ``last_accessed_at`` are kept because ranking and sleep's decay read them.
An ``unshared`` line holds the :func:`~mnemosyne.core.consolidation.sharing_key`
of a shared memory an agent forgot: the text itself is gone, and sleep must not
share it again in the importing database either. A ``forgotten`` line holds the
id of a memory ``forget`` removed (its text is gone): the importing database
records it as forgotten too, so no older export brings it back there. Sleep runs
(what ``undo_sleep`` needs) and database metadata are not exported.

Version 1 files (memory lines without ``type``, and no episodes or links), version
2 files (no ``unshared`` lines) and version 3 files (no ``forgotten`` lines) are
still read; a file without a header is read as version 1.

Importing adds only what is missing: episodes and memories matched by id, links
by their two ends and kind, so importing the same file twice adds nothing the
second time. The whole file is validated first; a link whose end is neither in
the file nor in the database is refused, with its line.
"""

from __future__ import annotations

import errno
import glob
import json
import os
import re
import sqlite3
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from .core.fingerprint import content_hash
from .core.timeutil import from_timestamp, optional_timestamp, to_timestamp
from .core.validation import (
    check_content,
    check_importance,
    check_label,
    check_metadata,
    check_scope,
    finite_number,
    whole_number,
)
from .errors import DiskFullError, InvalidInputError, MnemosyneError, StorageError
from .models import KINDS, STATUSES
from .storage.base import NewMemory
from .storage.sqlite.backup_file import manifest_path
from .storage.sqlite.connection import open_immutable
from .storage.sqlite.snapshot import remove_abandoned, temporary_file

FORMAT = "mnemosyne-jsonl"
VERSION = 4
LINK_KINDS = ("summarises", "merges", "supersedes")

_REQUIRED = ("id", "content", "source", "importance", "scope", "session_id", "created_at", "recorded_at")
# Optional memory fields of version 2, with the value a missing one means.
_MEMORY_DEFAULTS: dict[str, Any] = {
    "kind": "episodic", "status": "active", "metadata": {}, "valid_until": None, "episode_id": None,
    "idempotency_key": None, "strength": 1.0, "occurrences": 1, "last_seen_at": None,
    "access_count": 0, "last_accessed_at": None,
}
_FIELDS = {
    "memory": {"type", *_REQUIRED, *_MEMORY_DEFAULTS},
    "episode": {"type", "id", "session_id", "label", "started_at", "ended_at"},
    "link": {"type", "src_id", "dst_id", "kind", "run_id", "created_at"},
    "unshared": {"type", "key"},
    "forgotten": {"type", "id", "session_id"},
}
_SHARING_KEY = re.compile(r"[0-9a-f]{64}")  # a SHA-256 digest, as sharing_key writes it
_OPEN_FILE_NAME = re.compile(r"/dev/(stdout|stderr|stdin|fd/\d+)|/proc/(self|thread-self|\d+)/fd/\d+")
# Stored times, written as ISO 8601 text.
_TIMES = {"created_at", "recorded_at", "valid_until", "last_seen_at", "last_accessed_at", "started_at", "ended_at"}


@dataclass(slots=True)
class Export:
    """A validated export file, ready for the store's ``import_memories``."""

    memories: list[NewMemory] = field(default_factory=list)
    # Per memory id: the columns sleep and ranking keep besides the memory itself.
    usage: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Per memory id: its file and line, to name it in the store's refusal.
    where: dict[str, str] = field(default_factory=dict)
    episodes: list[dict[str, Any]] = field(default_factory=list)
    # Each link's columns, plus "where" (its file and line) for the store's refusal.
    links: list[dict[str, Any]] = field(default_factory=list)
    unshared: list[str] = field(default_factory=list)  # sharing keys sleep must not share again
    forgotten: dict[str, str] = field(default_factory=dict)  # id -> session of a forgotten memory


def write_jsonl(
    records: Iterable[tuple[str, dict[str, Any]]], path: Path, progress: Callable[[int], None] | None = None
) -> int:
    """Write a header and one line per ``(type, stored columns)`` record to ``path``
    atomically; return how many memories were written.

    A symlink is written through, to the file it points at. A stream (a pipe, a
    device, ``/dev/stdout`` even when the shell sent it to a file) is appended to:
    it cannot be replaced, and ``>>`` must keep what the file held.

    ``progress(done)``, if given, is called with the count of memories written so far.
    """
    try:
        if is_stream(path):
            with open(path, "a", encoding="utf-8") as stream:
                return _write_lines(records, stream, progress)
        return _replace_file(records, path.resolve(), progress)
    except BrokenPipeError:
        raise  # the reader stopped reading: the CLI ends quietly
    except OSError as exc:
        raise _export_error(exc, path) from exc


def _replace_file(
    records: Iterable[tuple[str, dict[str, Any]]], path: Path, progress: Callable[[int], None] | None
) -> int:
    """Write the export beside ``path`` and rename it into place. Over a file, the
    new one is private while it is written (the old one may be); a new file gets
    the umask's mode from the start. Its own name (locked, swept once abandoned)
    keeps two exports to one path apart."""
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_abandoned(path.parent, f".{glob.escape(path.name)}.[0-9]*.tmp")  # earlier releases' names
    with temporary_file(path, mode=0o600 if path.exists() else 0o666) as tmp:
        with open(tmp, "w", encoding="utf-8") as handle:
            count = _write_lines(records, handle, progress)
        _give_access(path, tmp)
        os.replace(tmp, path)
    return count


def _export_error(exc: OSError, path: Path) -> MnemosyneError:
    if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        return DiskFullError(f"cannot write the export to {path}: the disk is full (or a file size "
                             "limit was reached); a file it would replace is unchanged", path)
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOTDIR, errno.EISDIR, errno.ENOENT,
                     errno.EEXIST):
        return InvalidInputError(f"cannot write an export to {path} ({exc.strerror}); choose a path "
                                 "this user can create or replace")
    return StorageError(f"cannot write the export to {path} ({exc})", path)


# Characters that JSON leaves raw but that some line readers (Python's
# str.splitlines, editors) break lines at; they occur only inside strings, where
# their escapes mean the same text.
_LINE_BREAKS = str.maketrans({c: f"\\u{ord(c):04x}" for c in "\x85\u2028\u2029"})


def _escape_line_breaks(line: str) -> str:
    return line.translate(_LINE_BREAKS)


def check_writable(path: str | Path, expanded: Path) -> None:
    """Raise :class:`InvalidInputError` if ``path`` (the text as typed: ``Path`` drops
    a trailing slash; ``expanded``, with ``~`` expanded) names a folder rather than a
    file."""
    if str(path).endswith(("/", os.sep)) or expanded.is_dir():
        raise InvalidInputError(f"{path} is a folder; give the export file's path")
    # An export replaces the file it is written to: never a database or a backup
    # (a slip between "export" and "import" would otherwise erase one).
    if manifest_path(expanded).exists():
        raise InvalidInputError(f"{path} is a backup (its manifest is beside it); export to another path")
    if _is_database(expanded):
        raise InvalidInputError(f"{path} is a SQLite database, which an export would replace; export to another path")


def _is_database(path: Path) -> bool:
    """Whether ``path`` is a SQLite database file."""
    if not path.is_file() or path.stat().st_size == 0:
        return False
    try:
        probe = open_immutable(path)
    except sqlite3.Error:
        return False
    try:
        probe.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return True
    except sqlite3.DatabaseError:
        return False
    finally:
        probe.close()


def _give_access(replaced: Path, new: Path) -> None:
    """Give ``new`` the mode (and, where allowed, the owner) of the file it replaces:
    an export holds every session's memories, and a private file must stay private."""
    try:
        old = replaced.stat()
    except FileNotFoundError:
        return
    os.chmod(new, stat.S_IMODE(old.st_mode))
    if hasattr(os, "chown"):
        try:
            os.chown(new, old.st_uid, old.st_gid)
        except PermissionError:  # only root may give a file away; the mode still holds
            pass


def check_readable(path: Path) -> None:
    """Raise :class:`InvalidInputError` unless ``path`` is a file (or a pipe: ``<(...)``)
    this process may read."""
    if not path.exists() or path.is_dir():
        raise InvalidInputError(f"there is no file at {path} to import")
    if not os.access(path, os.R_OK):
        raise InvalidInputError(f"{path} cannot be read by this user; nothing was imported")


def is_stream(path: Path) -> bool:
    """Whether ``path`` is a stream rather than a file to create or replace: a pipe, a
    device, or one of the system's names for an open file (``/dev/stdout``, ``/dev/fd/3``),
    which may lead to a regular file that the shell opened for ``>>``. A regular file
    elsewhere under ``/dev`` (``/dev/shm``) is a file."""
    if _OPEN_FILE_NAME.fullmatch(str(path)):
        return True
    try:
        return not stat.S_ISREG(path.stat().st_mode) and not path.is_dir()
    except OSError:  # nothing there yet: a new file
        return False


def _write_lines(
    records: Iterable[tuple[str, dict[str, Any]]], handle: TextIO, progress: Callable[[int], None] | None
) -> int:
    handle.write(json.dumps({"format": FORMAT, "version": VERSION}) + "\n")
    if progress is not None:
        progress(0)
    count = lines = 0
    for kind, columns in records:
        line = {"type": kind, **{k: _iso(v) if k in _TIMES else v for k, v in columns.items()}}
        handle.write(_escape_line_breaks(json.dumps(line, ensure_ascii=False)) + "\n")
        lines += 1
        if kind == "memory":
            count += 1
            if progress is not None:
                progress(count)
    handle.write(json.dumps({"type": "end", "records": lines}) + "\n")
    return count


def read_jsonl(path: Path) -> Export:
    """Parse and validate a whole export before anything is written."""
    check_readable(path)
    parsed = _Reader()
    version = 1  # a file without a header is a version 1 file
    end: int | None = None  # the line of the end record (version 3 on)
    last = 0
    for number, line in _numbered_lines(path):
        if not line.strip():
            continue
        first = last == 0
        last = number
        if end is not None:
            raise InvalidInputError(f"{path}:{number} follows the end line ({end}); nothing was imported")
        try:
            record = json.loads(line)
        except (ValueError, RecursionError) as exc:  # RecursionError: nested thousands deep
            raise InvalidInputError(f"{path}:{number} is not valid JSON: {exc}") from exc
        if version >= 3 and isinstance(record, dict) and record.get("type") == "end":
            if record != {"type": "end", "records": parsed.count}:
                raise InvalidInputError(
                    f"{path}:{number}: the end line says {record!r}, but {parsed.count} records came "
                    "before it: the file was edited or spliced; nothing was imported"
                )
            end = number
            continue
        if first and isinstance(record, dict) and record.get("format") == FORMAT:
            if isinstance(record.get("version"), bool) or record.get("version") not in (1, 2, 3, VERSION):
                raise InvalidInputError(
                    f"{path} is export format version {record.get('version')!r}; this Mnemosyne "
                    f"reads versions 1 to {VERSION}; upgrade Mnemosyne"
                )
            version = record["version"]
            continue
        try:
            parsed.add(record, version, f"{path}:{number}")
        except InvalidInputError as exc:
            raise InvalidInputError(f"{path}:{number}: {exc}") from exc
    if last == 0:
        # An upstream `export | import` that failed sends nothing: not "0 memories".
        raise InvalidInputError(f"{path} is empty: an export has at least its header; nothing was imported")
    if version >= 3 and end is None:
        # Cut at a line boundary, a file is valid line by line: only this tells.
        raise InvalidInputError(
            f"{path} stops at line {last} without its end line: the export was cut short "
            "(a copy or transfer that did not finish); nothing was imported"
        )
    return parsed.export


def _numbered_lines(path: Path) -> Iterator[tuple[int, str]]:
    try:
        with open(path, encoding="utf-8-sig") as handle:  # "-sig": a BOM some editors add goes
            yield from enumerate(handle, start=1)
    except UnicodeDecodeError as exc:
        raise InvalidInputError(
            f"{path} is not UTF-8 text ({exc}); an export is JSON Lines in UTF-8: decompress a "
            "compressed export, restore a database or backup with `mnemosyne restore`, or convert "
            "other text (e.g. iconv -t UTF-8); nothing was imported"
        ) from exc


class _Reader:
    """Turns lines into an :class:`Export`, refusing duplicates within the file."""

    def __init__(self) -> None:
        self.export = Export()
        self._keys: set[str] = set()
        self._episodes: set[str] = set()
        self._links: set[tuple[str, str, str]] = set()
        self._unshared: set[str] = set()
        self.count = 0  # records added


    def add(self, record: Any, version: int, where: str) -> None:
        self.count += 1
        if not isinstance(record, dict):
            raise InvalidInputError("each line must be a JSON object")
        if version == 1:
            # Version 1 lines are memories; older writers added fields (e.g. "context")
            # that carry nothing to import.
            self._add_memory({k: v for k, v in record.items() if k in _FIELDS["memory"] and k != "type"}, where)
            return
        kind = record.get("type")
        if kind not in _FIELDS:
            raise InvalidInputError(f"type must be one of {sorted(_FIELDS)}, got {kind!r}")
        # A misspelt field would otherwise be dropped without a word.
        unknown = sorted(set(record) - _FIELDS[kind])
        if unknown:
            raise InvalidInputError(f"unknown fields {unknown} for a {kind} line")
        if kind == "memory":
            self._add_memory(record, where)
        elif kind == "episode":
            self._add_episode(record)
        elif kind == "link":
            self._add_link(record, where)
        elif kind == "unshared":
            self._add_unshared(record)
        else:
            self._add_forgotten(record)

    def _add_memory(self, record: dict[str, Any], where: str) -> None:
        missing = [key for key in _REQUIRED if key not in record]
        if missing:
            raise InvalidInputError(f"missing fields {missing}")
        values = {**_MEMORY_DEFAULTS, **record}
        memory_id = check_label(values["id"], "id")
        if memory_id in self.export.usage or memory_id in self.export.forgotten:
            raise InvalidInputError(f"memory {memory_id} appears twice in the file")
        content = check_content(values["content"])
        kind, status = values["kind"], values["status"]
        if kind not in KINDS or status not in STATUSES:
            raise InvalidInputError(f"unknown kind {kind!r} or status {status!r}")
        key = _optional_label(values["idempotency_key"], "idempotency_key")
        if key is not None:
            if key in self._keys:
                raise InvalidInputError(f"idempotency_key {key!r} is used by two memories of the file")
            self._keys.add(key)
        self.export.memories.append(NewMemory(
            id=memory_id,
            session_id=_stored_session_id(values["session_id"]),
            scope=check_scope(values["scope"]),
            content=content,
            content_hash=content_hash(content),
            source=check_label(values["source"], "source"),
            importance=check_importance(values["importance"]),
            metadata=check_metadata(values["metadata"], max_depth=None),  # stored once: it moves as it is
            created_at=to_timestamp(values["created_at"], "created_at"),
            recorded_at=to_timestamp(values["recorded_at"], "recorded_at"),
            valid_until=optional_timestamp(values["valid_until"], "valid_until"),
            kind=kind,
            status=status,
            idempotency_key=key,
            episode_id=_optional_label(values["episode_id"], "episode_id"),
        ))
        strength = finite_number(values["strength"])
        if strength is None or not 0 <= strength <= 1:
            raise InvalidInputError(f"strength must be a number from 0 to 1, got {values['strength']!r}")
        self.export.usage[memory_id] = {
            "strength": strength,
            "occurrences": _count(values["occurrences"], "occurrences", minimum=1),
            "last_seen_at": optional_timestamp(values["last_seen_at"], "last_seen_at"),
            "access_count": _count(values["access_count"], "access_count", minimum=0),
            "last_accessed_at": optional_timestamp(values["last_accessed_at"], "last_accessed_at"),
        }
        self.export.where[memory_id] = where

    def _add_episode(self, record: dict[str, Any]) -> None:
        missing = [key for key in ("id", "session_id", "label", "started_at") if key not in record]
        if missing:
            raise InvalidInputError(f"missing fields {missing}")
        episode_id = check_label(record["id"], "id")
        if episode_id in self._episodes:
            raise InvalidInputError(f"episode {episode_id} appears twice in the file")
        self._episodes.add(episode_id)
        self.export.episodes.append({
            "id": episode_id,
            "session_id": _stored_session_id(record["session_id"]),
            "label": check_label(record["label"], "label"),
            "started_at": to_timestamp(record["started_at"], "started_at"),
            "ended_at": optional_timestamp(record.get("ended_at"), "ended_at"),
        })

    def _add_link(self, record: dict[str, Any], where: str) -> None:
        missing = [key for key in ("src_id", "dst_id", "kind", "created_at") if key not in record]
        if missing:
            raise InvalidInputError(f"missing fields {missing}")
        src, dst = check_label(record["src_id"], "src_id"), check_label(record["dst_id"], "dst_id")
        kind = record["kind"]
        if kind not in LINK_KINDS:
            raise InvalidInputError(f"link kind must be one of {list(LINK_KINDS)}, got {kind!r}")
        if src == dst:
            raise InvalidInputError(f"a link from memory {src} to itself means nothing")
        if (src, dst, kind) in self._links:
            raise InvalidInputError(f"link {src} {kind} {dst} appears twice in the file")
        self._links.add((src, dst, kind))
        self.export.links.append({
            "src_id": src, "dst_id": dst, "kind": kind,
            "run_id": _optional_label(record.get("run_id"), "run_id"),
            "created_at": to_timestamp(record["created_at"], "created_at"),
            "where": where,
        })


    def _add_unshared(self, record: dict[str, Any]) -> None:
        key = record.get("key")
        if not isinstance(key, str) or not _SHARING_KEY.fullmatch(key):
            raise InvalidInputError(f"key must be a sharing key (64 lower-case hex digits), got {key!r}")
        if key in self._unshared:
            raise InvalidInputError(f"unshared key {key} appears twice in the file")
        self._unshared.add(key)
        self.export.unshared.append(key)

    def _add_forgotten(self, record: dict[str, Any]) -> None:
        missing = [key for key in ("id", "session_id") if key not in record]
        if missing:
            raise InvalidInputError(f"missing fields {missing}")
        memory_id = check_label(record["id"], "id")
        if memory_id in self.export.forgotten or memory_id in self.export.usage:
            raise InvalidInputError(f"memory {memory_id} appears twice in the file")
        self.export.forgotten[memory_id] = _stored_session_id(record["session_id"])


def _iso(seconds: float | None) -> str | None:
    return None if seconds is None else from_timestamp(seconds).isoformat()


def _stored_session_id(value: Any) -> str:
    # Of any length: an earlier release stored longer ids than a new session may have,
    # and once imported, the database holds that session, which then opens.
    return check_label(value, "session_id")


def _optional_label(value: Any, name: str) -> str | None:
    return None if value is None else check_label(value, name)


def _count(value: Any, name: str, minimum: int) -> int:
    # SQLite stores integers in 64 bits.
    number = whole_number(value)
    if number is None or not minimum <= number < 2**63:
        raise InvalidInputError(f"{name} must be a whole number from {minimum} to 2**63 - 1, got {value!r}")
    return number
