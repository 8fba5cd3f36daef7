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

    def __str__(self) -> str:
        return self.content

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (datetimes as ISO 8601 strings)."""
        data = asdict(self)
        for key in ("created_at", "recorded_at", "valid_until"):
            if data[key] is not None:
                data[key] = data[key].isoformat()
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
        """Memories that default recall can return."""
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
