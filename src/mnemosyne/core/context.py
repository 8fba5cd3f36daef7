"""Episode context for the index: each event is also indexed with its neighbours.

A turn's meaning often lives next to it ("yes, the blue one" answers the question
before it), so every memory gets a second indexed field holding the text of the
events around it in its session. Ranking still returns the memory itself.

A global memory is visible from every session, so its window only holds global
neighbours: the text of a session's private memories never helps another session
find anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

RADIUS = 2
WINDOW = 2 * RADIUS + 1  # events in a full window
# A window ends where the session fell silent for longer than this: "yes, the blue
# one" answers a question asked a moment before, not one from another day.
MAX_GAP_S = 3600.0
# Characters of each event a window holds. A window is there for the short turn whose
# meaning lives next to it; a neighbour's opening says what it is about. Whole, one
# pasted 5 MB document made each write near it rewrite 25 MB of windows (0.3 s a
# remember) and its windows five times its size on disk.
EVENT_CHARS = 8_000


@dataclass(frozen=True, slots=True)
class Event:
    seq: int
    content: str
    scope: str
    created_at: float


def windows(events: Sequence[Event], radius: int = RADIUS) -> dict[int, str]:
    """The context text of each event, given a session's events in time order.

    The window is the event itself and up to ``radius`` visible neighbours on each
    side, up to a silence longer than ``MAX_GAP_S``; neighbours a global event must
    not see are skipped, not counted. Each contributes its first ``EVENT_CHARS``.
    """
    result: dict[int, str] = {}
    everyone = list(range(len(events)))
    global_positions = [i for i, e in enumerate(events) if e.scope == "global"]
    rank_among_globals = {position: rank for rank, position in enumerate(global_positions)}
    for index, event in enumerate(events):
        if event.scope == "global":
            around = _reach(events, global_positions, rank_among_globals[index], radius)
        else:
            around = _reach(events, everyone, index, radius)
        result[event.seq] = "\n".join(events[i].content[:EVENT_CHARS] for i in around)
    return result


def _reach(events: Sequence[Event], visible: list[int], where: int, radius: int) -> list[int]:
    """The ``visible`` positions within ``radius`` of ``visible[where]``, without
    crossing a silence longer than ``MAX_GAP_S``."""
    def close(a: int, b: int) -> bool:
        return events[visible[b]].created_at - events[visible[a]].created_at <= MAX_GAP_S

    start = where
    while start > 0 and where - start < radius and close(start - 1, start):
        start -= 1
    end = where
    while end < len(visible) - 1 and end - where < radius and close(end, end + 1):
        end += 1
    return visible[start : end + 1]
