"""Sleep on SQLite: the lease, the planner's snapshot, and applying or undoing a plan.

Reading the snapshot takes no lock (WAL readers never wait). A plan is applied in
parts (``core/plan_parts.py``), each one short ``BEGIN IMMEDIATE`` transaction that
renews the lease, finds what its changes touch that changed since the snapshot (a
write that came in between two parts included), holds back the changes tied to it
(``core/hold_back.py``), and records everything needed to undo the rest exactly. A
part never cuts a summary from its sources nor a link from its ends, so a crash
between two parts leaves every memory as it was or fully consolidated, and the next
sleep does the rest.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...core.consolidation import COUNTED, Plan, Record, StoredSummary
from ...core.hold_back import count_changes, hold_back
from ...core.plan_parts import split_plan
from ...errors import InvalidInputError, LeaseHeldError
from ..base import NewMemory
from .cjk_index import index_edited
from .context_index import refresh_contexts
from .rows import Inserting, audit, dump_json, select_in
from .standing import unshared_keys
from .store import SQLiteStore

SLEEP_LEASE = "sleep"
# Changed rows (updates, new memories, links) per part of a run. Measured on 50k
# memories in 10k episodes (a 2-core machine): 112 parts, each holding the write lock
# 0.09 s at most, where one transaction held it 5.9 s.
ROWS_PER_PART = 1000
# Columns sleep may change on an existing memory (and undo restores): a summary's
# text too, once it stops quoting a superseded value.
_MUTABLE = ("status", "scope", "importance", "strength", "occurrences", "last_seen_at", "created_at",
            "content", "content_hash")
# Columns that decide which context windows an event is in (every status is an event).
_PLACES = {"scope", "created_at"}
_RECORD_SQL = (
    "SELECT id, session_id, scope, kind, status, content, content_hash, importance, created_at, "
    "valid_until, access_count, last_accessed_at, strength, occurrences, last_seen_at, episode_id, "
    "updated_at FROM memories WHERE status = 'active' OR id IN "
    "(SELECT dst_id FROM memory_links WHERE kind = 'summarises')"
)


@dataclass(slots=True)
class Snapshot:
    records: list[Record]
    updated_at: dict[str, float]
    summarised: set[str]
    open_episodes: dict[str, float]  # id -> when it was last written to
    labels: dict[str, str]
    unshared: set[str]  # sharing keys of shared memories forgotten
    summaries: dict[str, StoredSummary] = field(default_factory=dict)  # active ones, by id


@dataclass(frozen=True, slots=True)
class Run:
    """One sleep run about to be applied."""

    id: str
    holder: str  # the lease holder it applies under
    ttl: float  # seconds each part renews the lease for
    started_at: float
    report: dict[str, Any]  # what the run records beside the counts (the rule, summariser fallbacks)


@dataclass(slots=True)
class Applied:
    run_id: str
    changed_rows: int
    active_before: int
    active_after: int
    counts: dict[str, int]  # what was applied: the plan without what memories changed meanwhile held back
    held_back: set[str] = field(default_factory=set)  # memories left for the next sleep


@dataclass(slots=True)
class _Applying:
    """What the parts of a run applied so far did."""

    run: Run
    parts: int
    strengths: dict[str, float]  # each memory's stored strength, to count decay apart from reinforcement
    planned: dict[str, int]  # the planner's counts, the report's when nothing was held back
    done: int = 0
    active_before: int = 0
    active_change: int = 0
    changed_rows: int = 0
    counts: Counter[str] = field(default_factory=Counter)
    held: set[str] = field(default_factory=set)


class SleepStore:
    """The sleep verbs over one :class:`SQLiteStore`."""

    def __init__(self, store: SQLiteStore) -> None:
        self._store = store
        self._db = store._db

    # -- the lease ------------------------------------------------------------------

    def acquire_lease(self, holder: str, ttl: float, name: str = SLEEP_LEASE) -> None:
        """Take (or renew) the named lease, or raise :class:`LeaseHeldError`."""
        now = time.time()
        with self._db.write("take the sleep lease") as conn:
            self._refuse_if_held(conn, holder, name, now)
            conn.execute(
                "INSERT INTO leases (name, holder, expires_at) VALUES (?, ?, ?) ON CONFLICT (name) "
                "DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at",
                (name, holder, now + ttl),
            )

    def check_lease(self, name: str = SLEEP_LEASE) -> None:
        """Raise :class:`LeaseHeldError` if another process holds the named lease;
        take nothing and write nothing (a read-only file can be asked)."""
        with self._db.read() as conn:
            self._refuse_if_held(conn, None, name, time.time())

    def _refuse_if_held(self, conn: sqlite3.Connection, holder: str | None, name: str, now: float) -> None:
        row = conn.execute("SELECT holder, expires_at FROM leases WHERE name = ?", (name,)).fetchone()
        if (row is not None and row["holder"] != holder and row["expires_at"] > now
                and not _holder_is_dead(row["holder"])):
            raise LeaseHeldError(
                f"another sleeper ({row['holder']}) is consolidating {self._store.path} for up to "
                f"{row['expires_at'] - now:.0f} more seconds; try again later"
            )

    def release_lease(self, holder: str, name: str = SLEEP_LEASE) -> None:
        with self._db.write("release the sleep lease") as conn:
            conn.execute("DELETE FROM leases WHERE name = ? AND holder = ?", (name, holder))

    # -- reading --------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        """Active memories plus summarised sources, read in one read transaction."""
        with self._db.read() as conn:  # one read transaction: one consistent view
            rows = conn.execute(_RECORD_SQL).fetchall()
            summarised = {r[0] for r in conn.execute(
                "SELECT dst_id FROM memory_links WHERE kind = 'summarises'")}
            episodes = conn.execute("SELECT id, label, ended_at FROM episodes").fetchall()
            unshared = set(unshared_keys(conn))
            sources: dict[str, list[str]] = {}
            rules: dict[str, object] = {}
            for link in conn.execute(
                "SELECT l.src_id, l.dst_id, s.metadata FROM memory_links AS l "
                "JOIN memories AS s ON s.id = l.src_id JOIN memories AS m ON m.id = l.dst_id "
                "WHERE l.kind = 'summarises' AND s.kind = 'summary' AND s.status = 'active' "
                "ORDER BY m.created_at, m.seq"
            ):
                sources.setdefault(link["src_id"], []).append(link["dst_id"])
                if link["src_id"] not in rules:
                    metadata = json.loads(link["metadata"] or "{}")
                    rules[link["src_id"]] = metadata.get("rule") if isinstance(metadata, dict) else None
            # When each open episode was last written to: the planner treats one
            # silent for long as left open by a process that died.
            open_episodes = dict(conn.execute(
                "SELECT e.id, max(e.started_at, coalesce(max(m.recorded_at), 0)) FROM episodes AS e "
                "LEFT JOIN memories AS m ON m.episode_id = e.id WHERE e.ended_at IS NULL GROUP BY e.id"
            ).fetchall())
        records = [
            Record(**{key: row[key] for key in row.keys() if key != "updated_at"}) for row in rows
        ]
        return Snapshot(
            records=records,
            updated_at={row["id"]: row["updated_at"] for row in rows},
            summarised=summarised,
            open_episodes=open_episodes,
            labels={row["id"]: row["label"] for row in episodes},
            unshared=unshared,
            summaries={key: StoredSummary(tuple(ids), rules[key]) for key, ids in sources.items()},
        )

    # -- applying -------------------------------------------------------------------

    def apply(
        self, plan: Plan, snapshot: Snapshot, run: Run, contents: dict[str, str], new_ids: dict[str, str],
        between: Callable[[int, int], None] | None = None,
    ) -> Applied:
        """Apply ``plan`` part by part (:func:`split_plan`), each part one short
        transaction that holds back the changes tied to memories edited or forgotten
        since ``snapshot``, renews the lease and records how to undo it.

        ``between(done, parts)`` is called before each part but the first; it may
        raise to stop the run there (what the parts before did stands).
        """
        parts = split_plan(plan, ROWS_PER_PART)
        applying = _Applying(run, len(parts), {r.id: r.strength for r in snapshot.records}, plan.report_counts())
        for index, part in enumerate(parts):
            if index and between is not None:
                between(index, len(parts))
            self._apply_part(part, index, snapshot, applying, contents, new_ids)
        counts = applying.planned if not applying.held else {name: int(applying.counts[name]) for name in COUNTED}
        return Applied(run.id, applying.changed_rows, applying.active_before,
                       applying.active_before + applying.active_change, counts, applying.held)

    def _apply_part(
        self, plan: Plan, index: int, snapshot: Snapshot, applying: _Applying, contents: dict[str, str],
        new_ids: dict[str, str],
    ) -> None:
        run = applying.run
        now = time.time()
        with self._db.write("apply a sleep") as conn:
            self._keep_lease(conn, run, applying.done, applying.parts, now)
            # Every memory the plan changes or read to decide: what a new memory is
            # made of, and both ends of every link (the newer fact a "supersedes"
            # starts from).
            created = {new.key for new in plan.created}
            touched = (
                set(plan.updates) | {s for new in plan.created for s in new.sources}
                | {end for link in plan.links for end in (link.src, link.dst) if end not in created}
            )
            edited = {m for m in touched if _changed(conn, m, snapshot.updated_at)}
            held: set[str] = set()
            if edited:
                plan, held = hold_back(plan, edited, applying.strengths)
            counts = count_changes(plan, applying.strengths)
            if index == 0:
                applying.active_before = _active(conn)
            undo: dict[str, Any] = {"updates": {}, "inserted": []}
            moved = _Moved()
            active_change = 0
            for memory_id, changes in plan.updates.items():
                if "content" in changes:
                    changes = {**changes, "content_hash": _hash(changes["content"])}
                columns = [c for c in _MUTABLE if c in changes]
                old = conn.execute(
                    f"SELECT {', '.join(columns)}, updated_at FROM memories WHERE id = ?", (memory_id,)
                ).fetchone()
                undo["updates"][memory_id] = dict(old)
                if "status" in changes:
                    active_change += (changes["status"] == "active") - (old["status"] == "active")
                if _PLACES & set(columns):
                    moved.note(conn, memory_id)
                assignments = ", ".join(c + " = ?" for c in columns)
                conn.execute(
                    f"UPDATE memories SET {assignments}, updated_at = ? WHERE id = ?",
                    (*(changes[c] for c in columns), now, memory_id),
                )
                if _PLACES & set(columns):
                    moved.note(conn, memory_id)
                if "content" in changes:
                    _reindex(conn, memory_id, moved)
            with Inserting(conn, "sleep") as inserting:
                for new in plan.created:
                    memory_id = new_ids[new.key]
                    content = contents.get(new.key, new.content)
                    # A summary's sources are fixed; a shared memory's grow as repeats join it.
                    about = ({"episode": new.episode_id, "label": new.label, "sources": len(new.sources),
                              "rule": run.report["rule"]} if new.kind == "summary" else {})
                    self._store._insert_one(conn, NewMemory(
                        id=memory_id, session_id=new.session_id, scope=new.scope,
                        content=content, content_hash=_hash(content), source="sleep", importance=new.importance,
                        metadata={**about, "sleep_run": run.id},
                        created_at=new.created_at, recorded_at=now, kind=new.kind,
                    ), inserting)
                    conn.execute(
                        "UPDATE memories SET strength = ?, last_seen_at = ?, occurrences = ?, episode_id = ? "
                        "WHERE id = ?",
                        (new.strength, new.last_seen_at, new.occurrences, new.episode_id, memory_id),
                    )
                    undo["inserted"].append(memory_id)
                    active_change += 1
                    moved.note(conn, memory_id)
            # A memory promoted to global must stop carrying its session's private
            # neighbours in its window, and its new global neighbours must see it.
            moved.refresh(conn)
            conn.executemany(
                "INSERT OR IGNORE INTO memory_links (src_id, dst_id, kind, run_id, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                [(new_ids.get(link.src, link.src), link.dst, link.kind, run.id, now) for link in plan.links],
            )
            conn.executemany(
                "INSERT INTO audit_log (at, op, memory_id, session_id, detail) "
                "SELECT ?, 'consolidate', id, session_id, ? FROM memories WHERE id = ?",
                [(now, dump_json({"run": run.id, "fields": sorted(c)}), i) for i, c in plan.updates.items()],
            )
            changed = len(plan.updates) + len(plan.created)
            self._record_part(conn, applying, index, now, undo, changed, active_change, counts, held)
        applying.done += 1

    def _keep_lease(self, conn: sqlite3.Connection, run: Run, done: int, parts: int, now: float) -> None:
        """Renew the lease, in the transaction that relies on it; or stop the run if
        another sleeper took it over."""
        lease = conn.execute("SELECT holder FROM leases WHERE name = ?", (SLEEP_LEASE,)).fetchone()
        if lease is None or lease["holder"] != run.holder:
            raise LeaseHeldError(
                "the sleep lease expired and was taken over; this sleep changed nothing" if not done else
                f"the sleep lease expired and was taken over; this sleep stopped after {done} of its {parts} "
                f"parts (run {run.id}), and the next sleep does the rest"
            )
        conn.execute("UPDATE leases SET expires_at = ? WHERE name = ?", (now + run.ttl, SLEEP_LEASE))

    def _record_part(
        self, conn: sqlite3.Connection, applying: _Applying, index: int, now: float, undo: dict[str, Any],
        changed: int, active_change: int, counts: Counter[str], held: set[str],
    ) -> None:
        """Record part ``index``: its undo under its own row, and the run's report so
        far on the run's row (the first part's), which a crash leaves telling what
        the parts that committed did."""
        run = applying.run
        applying.changed_rows += changed
        applying.active_change += active_change
        applying.counts += counts
        applying.held |= held
        # Told again from the changes applied, or the planner's own once all applied.
        whole = index == applying.parts - 1 and not applying.held
        counts_so_far = applying.planned if whole else {name: int(applying.counts[name]) for name in COUNTED}
        report: dict[str, Any] = {**run.report, **counts_so_far, "active_before": applying.active_before,
                  "active_after": applying.active_before + applying.active_change,
                  "changed_rows": applying.changed_rows}
        if applying.parts > 1:
            report["parts"] = f"{index + 1} of {applying.parts}"
        if index == 0:
            conn.execute(
                "INSERT INTO sleep_runs (id, started_at, finished_at, status, report, undo) "
                "VALUES (?, ?, ?, 'applied', ?, ?)",
                (run.id, run.started_at, now, dump_json(report), dump_json(undo)),
            )
        else:
            conn.execute(
                "INSERT INTO sleep_runs (id, started_at, finished_at, status, report, undo) "
                "VALUES (?, ?, ?, 'applied', ?, ?)",
                (_part_id(run.id, index), run.started_at, now, dump_json({"part_of": run.id}), dump_json(undo)),
            )
            conn.execute("UPDATE sleep_runs SET report = ? WHERE id = ?", (dump_json(report), run.id))
        audit(conn, "sleep", None, None, {"run": run.id, "changed_rows": changed}
              | ({"part": index + 1} if applying.parts > 1 else {}))
        conn.execute(
            "INSERT INTO meta (key, value) VALUES ('last_sleep_at', ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value", (repr(now),),
        )

    def count_active(self) -> int:
        with self._db.read() as conn:
            return _active(conn)

    # -- undoing --------------------------------------------------------------------

    def undo(self, run_id: str, session_id: str) -> dict[str, Any]:
        """Restore what run ``run_id`` changed, every part of it; return its report.
        ``session_id`` is the caller's: a refusal names only the memories it may see."""
        with self._db.write("undo a sleep") as conn:
            row = conn.execute("SELECT * FROM sleep_runs WHERE id = ?", (run_id,)).fetchone()
            if row is None:
                raise InvalidInputError(f"no sleep run {run_id!r}; `mnemosyne stats` shows the last sleep")
            report: dict[str, Any] = json.loads(row["report"])
            if "part_of" in report:
                raise InvalidInputError(f"{run_id!r} is a part of sleep run {report['part_of']!r}; undo that run")
            if row["status"] != "applied":
                raise InvalidInputError(f"sleep run {run_id!r} was already undone")
            prefix = _parts_prefix(run_id)
            for later_id, later_undo in conn.execute(
                "SELECT id, undo FROM sleep_runs WHERE status = 'applied' AND (started_at, id) > (?, ?) "
                "AND substr(id, 1, ?) != ?",
                (row["started_at"], run_id, len(prefix), prefix),
            ):
                if _changes_something(json.loads(later_undo)):
                    raise InvalidInputError(
                        f"sleep run {later_id.partition(':')[0]!r} ran after {run_id!r} and built on it; undo it first"
                    )
            parts = [row, *conn.execute(
                "SELECT * FROM sleep_runs WHERE substr(id, 1, ?) = ? ORDER BY id", (len(prefix), prefix))]
            undos = [(part["finished_at"], json.loads(part["undo"])) for part in parts]
            _refuse_if_changed_since(conn, run_id, [
                (finished_at, [*undo["inserted"], *undo["updates"]]) for finished_at, undo in undos
            ], session_id)
            moved = _Moved()
            for _, undo in undos:
                for memory_id in undo["inserted"]:
                    moved.note(conn, memory_id)
                    conn.execute("DELETE FROM memories WHERE id = ?", (memory_id,))
            conn.execute("DELETE FROM memory_links WHERE run_id = ?", (run_id,))
            for _, undo in undos:
                for memory_id, old in undo["updates"].items():
                    if _PLACES & set(old):
                        moved.note(conn, memory_id)
                    conn.execute(
                        f"UPDATE memories SET {', '.join(c + ' = ?' for c in old)} WHERE id = ?",
                        (*old.values(), memory_id),
                    )
                    if _PLACES & set(old):
                        moved.note(conn, memory_id)
                    if "content" in old:
                        _reindex(conn, memory_id, moved)
            moved.refresh(conn)
            conn.execute("UPDATE sleep_runs SET status = 'undone' WHERE id = ? OR substr(id, 1, ?) = ?",
                         (run_id, len(prefix), prefix))
            audit(conn, "undo_sleep", None, None, {"run": run_id})
        return report


class _Moved:
    """Where events were and are, per session, so each session's windows are
    rewritten once after every change of a sleep or an undo."""

    def __init__(self) -> None:
        self._positions: dict[str, list[tuple[float, int]]] = {}
        self._had_global: set[str] = set()

    def note(self, conn: sqlite3.Connection, memory_id: str) -> None:
        """Record where ``memory_id`` is now (call before and after moving it)."""
        row = conn.execute(
            "SELECT session_id, scope, created_at, seq FROM memories WHERE id = ?", (memory_id,)
        ).fetchone()
        self._positions.setdefault(row["session_id"], []).append((row["created_at"], row["seq"]))
        if row["scope"] == "global":
            self._had_global.add(row["session_id"])

    def refresh(self, conn: sqlite3.Connection) -> None:
        for session_id, positions in self._positions.items():
            refresh_contexts(conn, session_id, positions, was_global=session_id in self._had_global)


def _refuse_if_changed_since(
    conn: sqlite3.Connection, run_id: str, parts: list[tuple[float, list[str]]], session_id: str
) -> None:
    """Refuse to undo a run over later edits: putting back the old columns would
    silently revert them. Each part of the run stamped every row it wrote with its
    finish time (``parts``: each one's time and rows).
    The refusal names the memories ``session_id`` may see, and only counts the others
    (another session's private ids would tell when it wrote and edited them)."""
    ids = [memory_id for _, part in parts for memory_id in part]
    finished = {memory_id: finished_at for finished_at, part in parts for memory_id in part}
    rows = select_in(conn, "SELECT id, updated_at, session_id, scope FROM memories WHERE id IN ({marks})", ids)
    stamps = {row["id"]: row["updated_at"] for row in rows}
    visible = {row["id"] for row in rows if row["scope"] == "global" or row["session_id"] == session_id}
    changed = [memory_id for memory_id in ids if stamps.get(memory_id) != finished[memory_id]]
    if changed:
        named = [memory_id for memory_id in changed if memory_id in visible][:5]
        unnamed = len(changed) - len(named)
        hidden = f"{unnamed} {'more ' if named else ''}forgotten or of another session" if unnamed else ""
        shown = " and ".join(part for part in (", ".join(named), hidden) if part)
        raise InvalidInputError(
            f"sleep run {run_id!r} was not undone: {len(changed)} memories it wrote were edited or "
            f"forgotten since ({shown}), and undoing it would silently revert that; nothing was "
            "changed. Edit or forget the memories it made one by one instead"
        )


def _reindex(conn: sqlite3.Connection, memory_id: str, moved: _Moved) -> None:
    """``memory_id`` was given other text: its text index follows, its vector goes
    (embedded again after the sleep, as an edited memory's is), and the context
    windows holding its text are rewritten."""
    row = conn.execute("SELECT seq, session_id, created_at, content FROM memories WHERE id = ?",
                       (memory_id,)).fetchone()
    index_edited(conn, row["seq"], row["session_id"], row["created_at"], row["content"])
    conn.execute("DELETE FROM memory_vectors WHERE seq = ?", (row["seq"],))
    moved.note(conn, memory_id)


def _changed(conn: sqlite3.Connection, memory_id: str, expected: dict[str, float]) -> bool:
    """Whether ``memory_id`` was edited or forgotten since the snapshot (``expected``)."""
    row = conn.execute("SELECT updated_at FROM memories WHERE id = ?", (memory_id,)).fetchone()
    return row is None or row[0] != expected.get(memory_id)


def _part_id(run_id: str, index: int) -> str:
    """The ``sleep_runs`` id of part ``index`` (from 1) of run ``run_id``: its undo is
    kept under that row, and the run's own row (``run_id``) holds the first part's."""
    return f"{_parts_prefix(run_id)}{index:05d}"


def _parts_prefix(run_id: str) -> str:
    return f"{run_id}:"


def _changes_something(undo: dict[str, Any]) -> bool:
    return bool(undo.get("updates") or undo.get("inserted"))


def _active(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT count(*) FROM memories WHERE status = 'active'").fetchone()[0])


def _hash(text: str) -> str:
    from ...core.fingerprint import content_hash

    return content_hash(text)


def _holder_is_dead(holder: str) -> bool:
    """Whether a lease holder ("host:pid:nonce") is a process of this machine that no
    longer runs: its lease can be taken at once instead of after it expires."""
    host, _, rest = holder.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, owned by someone else
        return False
    return False
