"""Timestamps: accepted as datetime, ISO 8601 text or Unix seconds; stored as UTC seconds."""

from __future__ import annotations

import math
import numbers
import time
from datetime import datetime, timezone, tzinfo

import numpy as np

from ..errors import InvalidInputError
from .validation import finite_number, whole_number

TimeLike = datetime | str | int | float

# Every stored time is read back as a datetime, so only instants a datetime can hold
# (years 1 to 9999, UTC) may be stored: one out of range would break every read.
# Times are stored as float seconds: exact to the microsecond from 1698 to 2241 (under
# 2**33 seconds from 1970), farther out within a few microseconds (16 by year 9999).
EARLIEST = datetime(1, 1, 1, tzinfo=timezone.utc).timestamp()
END = datetime(9999, 12, 31, tzinfo=timezone.utc).timestamp() + 86_400.0  # year 10000 begins
LATEST = math.nextafter(END, 0.0)  # the latest stored time: year 9999's last moment a float holds


def storable(seconds: float) -> bool:
    """Whether a stored time reads back as a date: the bound writes are checked
    against, and doctor checks stored rows against.

    >>> storable(LATEST), storable(END)
    (True, False)
    """
    return EARLIEST <= seconds <= LATEST


def to_timestamp(value: TimeLike, name: str) -> float:
    """Convert a user-supplied time to Unix seconds (UTC).

    A naive datetime (or ISO text without an offset) is taken as UTC, so the same
    input means the same instant on every machine. Times outside the years 1 to 9999
    (UTC) are refused.

    >>> to_timestamp("2026-04-01T09:30:00Z", "created_at")
    1775035800.0
    """
    if isinstance(value, (bool, np.bool_)):
        raise InvalidInputError(f"{name} must be a datetime, ISO 8601 text or Unix seconds, not a bool")
    seconds: int | float | None
    if isinstance(value, numbers.Real):  # NumPy's numbers too: times often come from an array
        # An int stays exact: one too large for a float fails the range check.
        seconds = whole_number(value)
        if seconds is None:
            seconds = finite_number(value)
        if seconds is None:
            raise InvalidInputError(f"{name} must be a finite number of Unix seconds, got {value!r}")
    elif isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError as exc:
            raise InvalidInputError(
                f"{name}={value!r} is not ISO 8601; use e.g. '2026-04-01T09:30:00+00:00'"
            ) from exc
        seconds = _utc_seconds(parsed)
    elif isinstance(value, datetime):
        seconds = _utc_seconds(value)
    else:
        raise InvalidInputError(
            f"{name} must be a datetime, ISO 8601 text or Unix seconds, not {type(value).__name__}"
        )
    # Compared exactly first (an int may be too large for a float), then as stored.
    if not (EARLIEST <= seconds < END and storable(float(seconds))):
        raise InvalidInputError(
            f"{name}={value!r} is outside the years 1 to 9999 (UTC) that a date can hold; "
            f"pass a time from {EARLIEST:.0f} to {END - 1:.0f} Unix seconds"
        )
    return float(seconds)


def _utc_seconds(value: datetime) -> float:
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    seconds = value.timestamp()
    if seconds >= END:
        try:
            value.astimezone(timezone.utc)
        except OverflowError:  # past year 9999 in UTC: the range check refuses it
            return seconds
        # The last microseconds of year 9999 (``datetime.max``) round up to year
        # 10000 as a float: keep them in year 9999.
        return LATEST
    return seconds


def zone_of(value: TimeLike | None) -> tzinfo | None:
    """The time zone ``value`` was given in, where "yesterday" or "last Friday" is a
    calendar day: that of an aware datetime or of ISO text with an offset; UTC for
    a naive one (naive times are UTC throughout); else None, this machine's."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            return timezone.utc  # refused elsewhere with a clear message
    if isinstance(value, datetime):
        return value.tzinfo or timezone.utc
    return None


def local_time(seconds: float, zone: tzinfo | None) -> datetime:
    """``seconds`` as a wall-clock time: aware in ``zone``; naive in this machine's zone
    for None, because a naive time's ``timestamp()`` reads it with the machine's
    daylight-saving rules, so "yesterday" counted back across a change is still a
    whole calendar day (a fixed offset would shift it by an hour). In UTC where the
    zone would carry it past the calendar's ends."""
    try:
        return datetime.fromtimestamp(seconds) if zone is None else from_timestamp(seconds).astimezone(zone)
    except (OverflowError, OSError, ValueError):
        return from_timestamp(seconds)


def optional_timestamp(value: TimeLike | None, name: str) -> float | None:
    return None if value is None else to_timestamp(value, name)


def check_valid_until(valid_until: TimeLike | None, created_at: float, *, created_given: bool) -> float | None:
    """``valid_until`` as Unix seconds, refused unless it is later than ``created_at``:
    a memory that stops being true before it happened would never be recalled."""
    until = optional_timestamp(valid_until, "valid_until")
    if until is not None and until <= created_at:
        happened = from_timestamp(created_at).isoformat()
        if not created_given:
            happened += " (now: created_at was not given)"
        raise InvalidInputError(
            f"valid_until {from_timestamp(until).isoformat()} is not after created_at {happened}: the "
            "memory would stop being true before it happened and never be recalled; give a later "
            "valid_until, or the created_at when it happened"
        )
    return until


# Times are returned as datetimes, to the microsecond, but stored to the float's
# precision. A bound is widened by half a microsecond so that a memory's own
# ``created_at``, given back as ``since`` or ``until``, includes it.
_HALF_MICROSECOND = 0.5e-6


def time_range(since: TimeLike | None, until: TimeLike | None) -> tuple[float | None, float | None]:
    """The inclusive ``[since, until]`` filter on ``created_at`` as Unix seconds; None
    for an open end."""
    since_ts = optional_timestamp(since, "since")
    until_ts = optional_timestamp(until, "until")
    if since_ts is not None and until_ts is not None and since_ts > until_ts:
        raise InvalidInputError("since is after until; swap them")
    return (
        None if since_ts is None else since_ts - _HALF_MICROSECOND,
        None if until_ts is None else until_ts + _HALF_MICROSECOND,
    )


def time_before(before: TimeLike | None, since: TimeLike | None = None) -> float | None:
    """The exclusive end ``before`` as a bound on stored seconds (``created_at < it``),
    None for none. It is exact to the microsecond, as every returned time is: it
    leaves out just the events whose ``created_at`` is ``before`` or later, so a
    page's first ``created_at`` given back reads all that came before the page and
    nothing of it, whatever the float kept.

    >>> time_before("2026-04-01T09:30:00Z") < 1775035800.0
    True
    """
    if before is None:
        return None
    before_ts = to_timestamp(before, "before")
    moment = _to_microsecond(before, before_ts)
    since_ts = optional_timestamp(since, "since")
    # Compared as times read back, to the microsecond: a since at the very time of
    # before asks for nothing, and is no mistake (the last page back).
    if since_ts is not None and from_timestamp(since_ts) > moment:
        raise InvalidInputError("since is after before; swap them")
    return first_stored_at(moment)


def first_stored_at(moment: datetime) -> float:
    """The least stored time that reads back as ``moment`` or later: ``created_at <
    it`` holds exactly the events read back as earlier than ``moment``.

    Found from the float next to the half microsecond before ``moment``, a few
    floats away at most: rounding to the microsecond keeps the order of times.
    """
    def reads_before(seconds: float) -> bool:
        try:
            return from_timestamp(seconds) < moment
        except (OverflowError, OSError, ValueError):  # past the calendar: year 0 or 10000
            return seconds < 0

    seconds = moment.timestamp() - _HALF_MICROSECOND
    while not reads_before(seconds):
        seconds = math.nextafter(seconds, -math.inf)
    while reads_before(seconds):
        seconds = math.nextafter(seconds, math.inf)
    return seconds


def _to_microsecond(value: TimeLike, seconds: float) -> datetime:
    """``value`` (already read as ``seconds``) as an aware datetime to the microsecond:
    a date or ISO text as given (a float loses microseconds past 2241), a number as
    it reads back."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    if isinstance(value, datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)
    return from_timestamp(seconds)


def from_timestamp(seconds: float) -> datetime:
    """Unix seconds to an aware UTC datetime."""
    return datetime.fromtimestamp(seconds, tz=timezone.utc)


def now() -> float:
    return time.time()
