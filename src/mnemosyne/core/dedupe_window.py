"""When a repeated ``remember`` should return the memory already stored (pure)."""

from __future__ import annotations

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
