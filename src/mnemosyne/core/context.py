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


@dataclass(frozen=True, slots=True)
class Event:
    seq: int
    content: str
    scope: str


def windows(events: Sequence[Event], radius: int = RADIUS) -> dict[int, str]:
    """The context text of each event, given a session's events in time order.

    The window is the event itself and up to ``radius`` visible neighbours on each
    side; neighbours a global event must not see are skipped, not counted.
    """
    result: dict[int, str] = {}
    global_positions = [i for i, e in enumerate(events) if e.scope == "global"]
    rank_among_globals = {position: rank for rank, position in enumerate(global_positions)}
    for index, event in enumerate(events):
        if event.scope == "global":
            where = rank_among_globals[index]
            around = global_positions[max(0, where - radius) : where + radius + 1]
        else:
            around = list(range(max(0, index - radius), min(len(events), index + radius + 1)))
        result[event.seq] = "\n".join(events[i].content for i in around)
    return result
