"""When a repeated ``remember`` should return the memory already stored (pure)."""

from __future__ import annotations

import math

from ..errors import InvalidInputError

# Long enough to absorb an agent's retries and re-statements after a restart,
# short enough that a fact genuinely observed again later is recorded again.
DEFAULT_DEDUPE_WINDOW_S = 300.0


def dedupe_since(recorded_at: float, window: float, allow_duplicate: bool) -> float | None:
    """The earliest ``recorded_at`` an identical memory may have to be reused.

    None means "always insert" (duplicates allowed, or the window is off).

    >>> dedupe_since(1000.0, 300.0, allow_duplicate=False)
    700.0
    """
    if allow_duplicate or window <= 0:
        return None
    return recorded_at - window


def check_seconds(value: object, name: str) -> float:
    """A finite, non-negative number of seconds."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) \
            or math.isinf(value) or value < 0:
        raise InvalidInputError(f"{name} must be a number of seconds >= 0, got {value!r}")
    return float(value)
