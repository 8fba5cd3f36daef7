"""Timestamps: accepted as datetime, ISO 8601 text or Unix seconds; stored as UTC seconds."""

from __future__ import annotations

import math
import time
from datetime import datetime, timezone

from ..errors import InvalidInputError

TimeLike = datetime | str | int | float


def to_timestamp(value: TimeLike, name: str) -> float:
    """Convert a user-supplied time to Unix seconds (UTC).

    A naive datetime (or ISO text without an offset) is taken as UTC, so the same
    input means the same instant on every machine.
    """
    if isinstance(value, bool):
        raise InvalidInputError(f"{name} must be a datetime, ISO 8601 text or Unix seconds, not a bool")
    if isinstance(value, (int, float)):
        if not math.isfinite(value):
            raise InvalidInputError(f"{name} must be a finite number of Unix seconds, got {value!r}")
        return float(value)
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError as exc:
            raise InvalidInputError(
                f"{name}={value!r} is not ISO 8601; use e.g. '2026-04-01T09:30:00+00:00'"
            ) from exc
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)
        return value.timestamp()
    raise InvalidInputError(
        f"{name} must be a datetime, ISO 8601 text or Unix seconds, not {type(value).__name__}"
    )


def optional_timestamp(value: TimeLike | None, name: str) -> float | None:
    return None if value is None else to_timestamp(value, name)


def from_timestamp(seconds: float) -> datetime:
    """Unix seconds to an aware UTC datetime."""
    return datetime.fromtimestamp(seconds, tz=timezone.utc)


def now() -> float:
    return time.time()
