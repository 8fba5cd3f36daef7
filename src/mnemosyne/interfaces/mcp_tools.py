"""The MCP tools: one table entry per public operation, checked and run synchronously.

This module knows nothing about the MCP SDK, so the table is testable (and
importable) without the ``mcp`` extra. ``mcp_server`` turns each :class:`ToolSpec`
into an MCP tool and runs :func:`call_tool` on a worker thread.

Adding a tool is one entry in ``TOOLS``: a name, a description an LLM can act on,
its JSON-schema properties, and a function ``(mem, args, sessions) -> dict`` that
calls one public method and returns a JSON-ready dict. Every tool takes an optional
``session_id``, so several agents can share one database, each with its own session
scope plus the global one, and pass their own id on every call; the tools that act
on the whole database (sleep, stats, backup) do the same whichever session calls.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mnemosyne import InvalidInputError, MemoryNotFoundError, Mnemosyne, StorageError
from mnemosyne.core.validation import MAX_CONTEXT, MAX_LIMIT, MAX_TOP_K, check_whole, expand_user, is_real, whole_number
from mnemosyne.dr.recovery import MANIFEST_SUFFIX, create_backup, manifest_path
from mnemosyne.storage.sqlite.connection import file_identity

Result = dict[str, Any]


class Sessions:
    """One :class:`Mnemosyne` per session id over one database, opened on first use.

    The default session's instance opens the database; every other session's shares
    its connections, vector index and model. Each session kept open otherwise held a
    connection per worker thread that ever ran one of its calls, and a copy of the
    index: a burst of calls over 16 sessions held 586 open files and a 30,000-memory
    database 50 MB per session.

    At most ``max_open`` other sessions stay open: a server that agents reach with
    ever new session ids would otherwise keep each one's state until it runs out.
    The least recently used one not in use is closed; its memories stay in the
    database, and it is opened again when next asked for.

    >>> sessions = Sessions("memories.db", default_session="planner")
    >>> with sessions.use("coder") as mem:
    ...     mem.remember("Tests live in tests/")
    """

    def __init__(
        self,
        db_path: str | Path | None,
        default_session: str = "default",
        backup_dir: str | Path | None = None,
        max_open: int = 16,
    ) -> None:
        if db_path is not None and str(db_path).endswith(("/", os.sep)):
            # Made absolute, the path would lose its separator and name a file of the
            # folder's name: refused here, as Mnemosyne() refuses it.
            raise InvalidInputError(f"db_path {db_path} names a directory; pass a file path such as "
                                    f"{os.path.join(db_path, 'memories.db')}")
        # Absolute once: every session opens the same file, whatever the working
        # directory becomes (a symlink is still followed, not resolved here).
        self.db_path = None if db_path is None else Path(os.path.abspath(expand_user(db_path, "db_path")))
        self.default_session = default_session
        self._backup_dir = None if backup_dir is None else expand_user(backup_dir, "backup_dir")
        self._max_open = max_open
        self._base: Mnemosyne | None = None  # the default session's: it holds the database open
        self._open: dict[str, Mnemosyne] = {}  # the others, least recently used first
        self._users: dict[str, int] = {}
        self._lock = threading.Lock()
        # The database file the first session opened (path, device and inode): deleted
        # or replaced, every session is refused, none opens a new empty one there.
        self._file: tuple[Path, tuple[int, int] | None] | None = None

    @contextmanager
    def use(self, session_id: str | None = None) -> Iterator[Mnemosyne]:
        """The instance for ``session_id`` (``None``: the server's default session),
        kept open while the block runs."""
        key = self.default_session if session_id is None else session_id
        with self._lock:
            self._check_file()
            if self._base is None:
                self._base = Mnemosyne(session_id=self.default_session, db_path=self.db_path)
                self._file = (self._base.db_path, file_identity(self._base.db_path))
            base = self._base
        if key == self.default_session:
            yield base  # never closed before the server: every other session needs it
            return
        with self._lock:
            mem = self._open.pop(key, None)
            if mem is None:
                # Opening validates the session id, so a bad one never enters the cache.
                mem = base._for_session(key)
            self._open[key] = mem
            self._users[key] = self._users.get(key, 0) + 1
            idle = [k for k in self._open if not self._users.get(k)]
            evicted = [self._open.pop(k) for k in idle[: max(0, len(self._open) - self._max_open)]]
        for old in evicted:
            old.close()
        try:
            yield mem
        finally:
            with self._lock:
                self._users[key] -= 1
                if not self._users[key]:
                    del self._users[key]

    def _check_file(self) -> None:
        if self._file is not None and file_identity(self._file[0]) != self._file[1]:
            path = self._file[0]
            raise StorageError(f"the database file {path} was deleted or replaced while this server ran; "
                               "restart the server to open the file there now", path)

    @property
    def backup_dir(self) -> Path:
        """Where the ``backup`` tool writes: ``--backup-dir``, else ``backups/`` beside the database."""
        if self._backup_dir is not None:
            return self._backup_dir.resolve()
        with self.use() as mem:
            return (mem.db_path.parent / "backups").resolve()

    def close(self) -> None:
        with self._lock:
            opened, self._open = list(self._open.values()), {}
            base, self._base = self._base, None
        for mem in [*opened, *([base] if base is not None else [])]:  # the database's holder last
            mem.close()


@dataclass(frozen=True)
class ToolSpec:
    """One MCP tool: what an LLM sees (name, description, schema) and what it runs."""

    name: str
    description: str
    run: Callable[[Mnemosyne, Result, Sessions], Result]
    properties: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    per_session: bool = True  # sees the memories of the session_id given; else the whole database
    read_only: bool = False
    destructive: bool = False

    def input_schema(self) -> Result:
        """The tool's JSON schema, with ``session_id`` added: every tool takes one."""
        properties = {**self.properties, "session_id": SESSION_ID if self.per_session else ANY_SESSION_ID}
        return {
            "type": "object",
            "properties": properties,
            "required": list(self.required),
            "additionalProperties": False,
        }


def call_tool(sessions: Sessions, name: str, arguments: Mapping[str, Any] | None) -> Result:
    """Check ``arguments`` against the tool's schema, run it, return its JSON-ready result.

    Raises :class:`InvalidInputError` for an unknown tool or bad arguments, and any
    other :class:`MnemosyneError` the operation raises; nothing is written then.

    >>> call_tool(sessions, "remember", {"content": "Deploys happen on Fridays"})
    {'id': '0193...'}
    """
    spec = TOOLS_BY_NAME.get(name)
    if spec is None:
        raise InvalidInputError(f"there is no tool {name!r}; the tools are: {', '.join(TOOLS_BY_NAME)}")
    args = dict(arguments or {})
    _check_arguments(spec, args)
    session_id = args.pop("session_id", None)
    with sessions.use(session_id) as mem:
        return spec.run(mem, args, sessions)


# -- the tools ------------------------------------------------------------------------


def _remember(mem: Mnemosyne, args: Result, _: Sessions) -> Result:
    return {"id": mem.remember(**args), "session_id": mem.session_id}


def _recall(mem: Mnemosyne, args: Result, _: Sessions) -> Result:
    query = args.pop("query")
    memories = mem.recall(query, args.pop("top_k", 10), **args)
    return {"count": len(memories), "memories": [m.to_dict() for m in memories]}


def _get(mem: Mnemosyne, args: Result, _: Sessions) -> Result:
    memory = mem.get(args["memory_id"])
    if memory is None:
        raise MemoryNotFoundError(args["memory_id"], mem.session_id)
    return {"memory": memory.to_dict()}


def _update(mem: Mnemosyne, args: Result, _: Sessions) -> Result:
    memory_id = args.pop("memory_id")
    return {"memory": mem.update(memory_id, **args).to_dict()}


def _forget(mem: Mnemosyne, args: Result, _: Sessions) -> Result:
    mem.forget(args["memory_id"])
    return {"forgotten": args["memory_id"]}


def _timeline(mem: Mnemosyne, args: Result, _: Sessions) -> Result:
    # Checked here: the API's "None for every event" means the default (100) to a tool.
    limit = check_whole(args.get("limit", 100), "limit", 1, MAX_LIMIT)
    since, until = args.get("since"), args.get("until")
    events = mem.timeline(since=since, until=until, before=args.get("before"), limit=limit)
    # A page holds every event at its first one's time, so before = that time reads
    # exactly the rest: none twice, none skipped, and paging back ends.
    earlier = len(events) >= limit and bool(
        mem.timeline(since=since, until=until, before=events[0].created_at, limit=1))
    return {"count": len(events), "memories": [m.to_dict() for m in events], "earlier_left_out": earlier,
            "next_before": events[0].created_at.isoformat() if earlier else None}


def _sleep(mem: Mnemosyne, args: Result, _: Sessions) -> Result:
    return mem.sleep(dry_run=args.get("dry_run", False)).to_dict()


def _stats(mem: Mnemosyne, args: Result, _: Sessions) -> Result:
    return mem.get_stats().to_dict()


_BACKUP_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,120}")
_NAMING = threading.Lock()  # held while an unnamed backup picks its name and is written


def _backup(mem: Mnemosyne, args: Result, sessions: Sessions) -> Result:
    # A plain file name inside the backup folder: a caller can never overwrite
    # an arbitrary file (or an older backup or its manifest) through this tool.
    folder = sessions.backup_dir
    name = args.get("name")
    if name is None:
        # Concurrent calls would choose the same free name: one at a time here, and a
        # name another server takes meanwhile (create_backup claims it atomically) is
        # passed over for the next.
        with _NAMING:
            stem = f"{mem.db_path.stem}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"
            for n in range(1, 1000):
                name = f"{stem}.bak" if n == 1 else f"{stem}-{n}.bak"
                if _taken(folder / name):
                    continue
                try:
                    manifest = create_backup(db_path=mem.db_path, backup_path=folder / name)
                except InvalidInputError:
                    if _taken(folder / name):
                        continue
                    raise
                return {"backup_path": str(folder / name), **vars(manifest)}
        raise InvalidInputError(f"no free backup name like {stem}-N.bak in {folder}; pass a name")
    if not isinstance(name, str) or not _BACKUP_NAME.fullmatch(name) or ".." in name:
        raise InvalidInputError(
            f"backup name {name!r} must be a plain file name (letters, digits, '.', '_', '-'), "
            "not a path; it is written inside the server's backup folder"
        )
    elif name.endswith(MANIFEST_SUFFIX):
        raise InvalidInputError(
            f"backup name {name!r} ends in {MANIFEST_SUFFIX!r}, which names a backup's manifest; "
            "choose a name without it"
        )
    elif _taken(folder / name):
        raise InvalidInputError(f"a backup named {name!r} (or its manifest) already exists; choose another name")
    manifest = create_backup(db_path=mem.db_path, backup_path=folder / name)
    return {"backup_path": str(folder / name), **vars(manifest)}


def _taken(path: Path) -> bool:
    return path.exists() or manifest_path(path).exists()


# -- schemas --------------------------------------------------------------------------

SESSION_ID = {
    "type": "string",
    "description": (
        "Which agent session to act as. Session-scoped memories are visible only to the "
        "session that stored them; global ones to every session. Omit it to use the "
        "server's default session (the --session it was started with)."
    ),
}
# An agent may pass its session on every call: a tool over the whole database takes
# it (checked as any session id is) rather than fail the call.
ANY_SESSION_ID = {
    "type": "string",
    "description": (
        "The calling agent's session, accepted as every tool accepts it. This tool acts on "
        "the whole database, whichever session calls it."
    ),
}
MEMORY_ID = {"type": "string", "description": "The memory's id, as returned by remember or recall."}
IMPORTANCE_TEXT = "How much this matters, from 0 (trivia) to 1 (critical). Ranks recall results."
IMPORTANCE = {"type": "number", "minimum": 0, "maximum": 1, "description": IMPORTANCE_TEXT}
METADATA_TEXT = 'Free-form JSON object stored with the memory, e.g. {"ticket": 42, "file": "nav.tsx"}.'
METADATA = {"type": "object", "description": METADATA_TEXT}
TIME = "An ISO 8601 date or time, e.g. 2026-04-01 or 2026-04-01T09:30:00Z."

TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "remember",
        "Store one memory that must survive restarts: a decision, a fact, progress made, the "
        "next step, a user preference. Write it as a self-contained sentence (it is recalled "
        "later without this conversation). Returns the new memory's id.",
        _remember,
        {
            "content": {"type": "string", "description": "The text to remember, in full."},
            "source": {
                "type": "string",
                "description": "Where it came from: conversation, task-tracker, ci... Default: conversation.",
            },
            "importance": {**IMPORTANCE, "description": IMPORTANCE_TEXT + " Default: 0.5."},
            "scope": {
                "type": "string", "enum": ["session", "global"],
                "description": (
                    "session (default): working context for this session only. global: lasting "
                    "knowledge every session and agent of this database should see."
                ),
            },
            "metadata": METADATA,
            "created_at": {"type": "string", "description": f"When it happened (default: now). {TIME}"},
            "valid_until": {"type": "string", "description": f"Stop recalling it after this time. {TIME}"},
            "idempotency_key": {
                "type": "string",
                "description": (
                    "A name for this write, unique in the database (e.g. order-1182-shipped). Calling "
                    "again with the same key (a retry after a timeout) returns the id stored the first "
                    "time instead of storing a copy; the same key with other content is an error."
                ),
            },
        },
        required=("content",),
    ),
    ToolSpec(
        "recall",
        "Find the stored memories most relevant to a question, best first, with their full "
        "content, id, score, source and time. Call it at the start of a task or after a "
        "restart to recover context, e.g. 'design progress and next steps'.",
        _recall,
        {
            "query": {"type": "string", "description": "What to look for, in plain words."},
            "top_k": {
                "type": "integer", "minimum": 1, "maximum": MAX_TOP_K,
                "description": "How many memories to return at most. Default: 10.",
            },
            "scope": {
                "type": "string", "enum": ["session", "global"],
                "description": "Only this scope. Default: both this session's and global memories.",
            },
            "source": {
                "type": ["string", "array"], "items": {"type": "string"},
                "description": "Only memories from this source (or any of these sources).",
            },
            "since": {"type": "string", "description": f"Only memories created at or after it. {TIME}"},
            "until": {"type": "string", "description": f"Only memories created at or before it. {TIME}"},
            "include_consolidated": {
                "type": "boolean",
                "description": "Also search originals that sleep consolidation summarised. Default: false.",
            },
            "context": {
                "type": "integer", "minimum": 0, "maximum": MAX_CONTEXT,
                "description": (
                    "Also return, in each memory's context list, up to this many events of its session "
                    "just before and just after it, oldest first: what led to it and what followed. "
                    "The ranking is unchanged. Default: 0."
                ),
            },
        },
        required=("query",),
        read_only=True,
    ),
    ToolSpec(
        "get",
        "Read one memory by id, in full. Fails with code not_found if no memory with that "
        "id is visible from this session.",
        _get,
        {"memory_id": MEMORY_ID},
        required=("memory_id",),
        read_only=True,
    ),
    ToolSpec(
        "update",
        "Correct a memory: replace its content, importance or metadata (give at least one). "
        "Returns the updated memory. Prefer this over remembering a contradicting copy.",
        _update,
        {
            "memory_id": MEMORY_ID,
            "content": {"type": "string", "description": "The new full text."},
            "importance": IMPORTANCE,
            "metadata": {**METADATA, "description": METADATA_TEXT + " Replaces the old metadata."},
        },
        required=("memory_id",),
    ),
    ToolSpec(
        "forget",
        "Delete a memory permanently from every index (only an audit tombstone remains). "
        "Use it for wrong or sensitive memories; use update to correct one.",
        _forget,
        {"memory_id": MEMORY_ID},
        required=("memory_id",),
        destructive=True,
    ),
    ToolSpec(
        "timeline",
        "What happened, in order: this session's own events (private and global) between two "
        "times, oldest first, including originals that sleep consolidated: the latest `limit` "
        "of them (more if several share the first one's time: a page never splits them). "
        "earlier_left_out says whether earlier ones were cut; to read those, call again with "
        "before = the result's next_before, the same since and until, until earlier_left_out "
        "is false: each event comes once. Use it to replay the steps of a task, e.g. "
        "everything since yesterday's deploy.",
        _timeline,
        {
            "since": {"type": "string", "description": f"Only events at or after it. {TIME}"},
            "until": {"type": "string", "description": f"Only events at or before it. {TIME}"},
            "before": {
                "type": "string",
                "description": f"Only events strictly before it: pass next_before to read the earlier page. {TIME}",
            },
            "limit": {
                "type": "integer", "minimum": 1, "maximum": MAX_LIMIT,
                "description": "Return the latest this many events (still oldest first), and any others at "
                               "the first one's time. Default: 100.",
            },
        },
        read_only=True,
    ),
    ToolSpec(
        "sleep",
        "Consolidate the whole database now: merge duplicates, summarise finished episodes, "
        "decay unused memories, promote repeated knowledge to global. Nothing is deleted "
        "and the run can be undone. Call it when idle, not in the middle of a task. Fails "
        "with code lease_held if another agent is already consolidating.",
        _sleep,
        {
            "dry_run": {
                "type": "boolean", "description": "Only report what would change. Default: false.",
            },
        },
        per_session=False,
    ),
    ToolSpec(
        "stats",
        "Describe the whole database: memory counts by scope, status, kind and session, "
        "its size, schema version, and when it was last backed up and consolidated.",
        _stats,
        per_session=False,
        read_only=True,
    ),
    ToolSpec(
        "backup",
        "Write a verified backup of the whole database into the server's backup folder "
        "(safe while agents keep writing). Do it before risky operations. Returns the "
        "backup's path, checksum and memory count.",
        _backup,
        {
            "name": {
                "type": "string",
                "description": "File name for the backup (default: <database>-<UTC time>.bak); not a path.",
            },
        },
        per_session=False,
    ),
)
TOOLS_BY_NAME = {spec.name: spec for spec in TOOLS}


# -- argument checks ------------------------------------------------------------------

# Numbers as the API takes them (NumPy's too, never a bool), for tools called in-process.
_JSON_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "number": is_real,
    # JSON has one kind of number: 2.0 is an integer to a JSON schema (made int below).
    "integer": lambda v: whole_number(v) is not None or (is_real(v) and float(v).is_integer()),
    "boolean": lambda v: isinstance(v, bool),
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
}


def _check_arguments(spec: ToolSpec, args: Result) -> None:
    """Names and JSON types only; value rules (ranges, formats) are the API's to enforce."""
    schema = spec.input_schema()
    allowed = schema["properties"]
    unknown = sorted(set(args) - set(allowed))
    if unknown:
        raise InvalidInputError(
            f"{spec.name} does not take {', '.join(unknown)}; its arguments are: {', '.join(allowed)}"
        )
    missing = [name for name in schema["required"] if args.get(name) is None]
    if missing:
        raise InvalidInputError(f"{spec.name} needs {', '.join(missing)}")
    for name, value in list(args.items()):
        if value is None:  # JSON null means "not given"
            del args[name]
            continue
        expected = allowed[name]["type"]
        types = expected if isinstance(expected, list) else [expected]
        if not any(_JSON_TYPES[t](value) for t in types):
            raise InvalidInputError(
                f"{spec.name}: {name} must be of JSON type {' or '.join(types)}, got {type(value).__name__}"
            )
        if types == ["integer"]:
            args[name] = value = int(value)
        if "enum" in allowed[name] and value not in allowed[name]["enum"]:
            choices = allowed[name]["enum"]
            raise InvalidInputError(f"{spec.name}: {name} must be one of {choices}, got {value!r}")
