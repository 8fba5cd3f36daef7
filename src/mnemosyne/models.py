"""The values Mnemosyne hands back: plain, immutable dataclasses."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any, Literal

Scope = Literal["session", "global"]
SCOPES: tuple[str, ...] = ("session", "global")

# kind: what produced the memory. status: whether default recall shows it.
KINDS: tuple[str, ...] = ("episodic", "summary", "fact")
STATUSES: tuple[str, ...] = ("active", "consolidated", "superseded", "expired")


@dataclass(frozen=True, slots=True)
class Memory:
    """One stored memory. ``str(memory)`` is its full content.

    >>> print(mem.recall("next steps")[0])
    Next step: implement responsive navigation component.
    """

    id: str
    content: str
    source: str
    importance: float
    scope: str
    session_id: str
    created_at: datetime
    recorded_at: datetime
    metadata: dict[str, Any] = field(default_factory=dict)
    kind: str = "episodic"
    status: str = "active"
    valid_until: datetime | None = None
    access_count: int = 0
    score: float | None = None
    explanation: dict[str, float] | None = None
    # Neighbouring events of the same session, filled by ``recall(..., context=N)``.
    context: tuple[Memory, ...] = ()

    def __str__(self) -> str:
        return self.content

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (datetimes as ISO 8601 strings)."""
        data = asdict(self)
        for key in ("created_at", "recorded_at", "valid_until"):
            if data[key] is not None:
                data[key] = data[key].isoformat()
        data["context"] = [event.to_dict() for event in self.context]
        return data


@dataclass(frozen=True, slots=True)
class Stats:
    """What ``get_stats()`` reports about one database."""

    total: int
    by_scope: dict[str, int]
    by_status: dict[str, int]
    by_kind: dict[str, int]
    by_session: dict[str, int]
    db_path: str
    db_size_bytes: int
    schema_version: int
    embedder: str | None
    last_backup_at: datetime | None
    last_sleep_at: datetime | None

    @property
    def active(self) -> int:
        """Memories of status ``active``: those default recall can return, but for any
        past their ``valid_until`` that no sleep has marked ``expired`` yet."""
        return self.by_status.get("active", 0)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (datetimes as ISO 8601 strings)."""
        data = asdict(self)
        data["active"] = self.active
        for key in ("last_backup_at", "last_sleep_at"):
            if data[key] is not None:
                data[key] = data[key].isoformat()
        return data


@dataclass(frozen=True, slots=True)
class DoctorCheck:
    """One finding of ``doctor()``: what was checked, whether it passed, and how."""

    name: str
    ok: bool
    detail: str


@dataclass(frozen=True, slots=True)
class DoctorReport:
    """What ``doctor()`` found (and, with ``repair=True``, what it rebuilt).

    >>> report = mem.doctor()
    >>> report.ok, [c.name for c in report.problems]
    (True, [])
    """

    db_path: str
    schema_version: int | None
    latest_schema_version: int
    checks: tuple[DoctorCheck, ...]
    repaired: tuple[str, ...] = ()
    backup_path: str | None = None

    @property
    def ok(self) -> bool:
        return all(check.ok for check in self.checks)

    @property
    def problems(self) -> tuple[DoctorCheck, ...]:
        return tuple(check for check in self.checks if not check.ok)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        data = asdict(self)
        data["ok"] = self.ok
        return data


@dataclass(frozen=True, slots=True)
class Episode:
    """A time-ordered run of one session's events.

    ``id`` is the explicit episode's id (``with mem.episode(label):``) or, for an
    episode found by a time gap, ``"auto:"`` + the id of its first event.
    ``summary`` is the summary memory sleep made of it, when there is one.
    """

    id: str
    session_id: str
    label: str | None
    started_at: datetime
    ended_at: datetime
    size: int
    closed: bool
    summary: Memory | None = None
    event_ids: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (datetimes as ISO 8601 strings)."""
        return {
            "id": self.id, "session_id": self.session_id, "label": self.label,
            "started_at": self.started_at.isoformat(), "ended_at": self.ended_at.isoformat(),
            "size": self.size, "closed": self.closed,
            "summary": None if self.summary is None else self.summary.to_dict(),
            "event_ids": list(self.event_ids),
        }


@dataclass(frozen=True, slots=True)
class SleepReport:
    """What one ``sleep()`` did. ``id`` is what ``undo_sleep()`` takes.

    ``changed_rows`` counts memory rows inserted or updated: 0 means the database's
    memories are exactly as before (a second sleep with no new data reports 0).
    A ``dry_run`` report counts what a real run would do (``merged``, ``summaries``,
    ...), but changed nothing: ``changed_rows`` is 0 and ``active_after`` is
    ``active_before``.
    """

    id: str
    started_at: datetime
    finished_at: datetime
    active_before: int
    active_after: int
    merged: int = 0
    summaries: int = 0
    summarised: int = 0
    superseded: int = 0
    expired: int = 0
    promoted: int = 0
    decayed: int = 0
    reinforced: int = 0
    changed_rows: int = 0
    summariser_fallbacks: int = 0
    dry_run: bool = False

    @property
    def seconds(self) -> float:
        return (self.finished_at - self.started_at).total_seconds()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (datetimes as ISO 8601 strings)."""
        data = asdict(self)
        data["started_at"] = self.started_at.isoformat()
        data["finished_at"] = self.finished_at.isoformat()
        data["seconds"] = round(self.seconds, 3)
        return data
