"""Splitting a session's events into episodes (pure).

An episode is either explicit (every event remembered inside
``with mem.episode(label):`` carries that episode's id) or found by time: a
session's other events start a new episode wherever the gap between two
consecutive events exceeds ``gap`` seconds.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Protocol, TypeVar


class Event(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def session_id(self) -> str: ...
    @property
    def created_at(self) -> float: ...
    @property
    def episode_id(self) -> str | None: ...


E = TypeVar("E", bound=Event)

AUTO_PREFIX = "auto:"


def split_episodes(events: Sequence[E], gap: float) -> list[tuple[str, list[E]]]:
    """Group events into ``(episode key, events in time order)``, ordered by start.

    >>> split_episodes(events, gap=1800)   # 30 minutes of silence ends an episode
    [('auto:0193...', [...]), ('0194...', [...])]
    """
    if gap <= 0:
        raise ValueError("gap must be positive")
    explicit: dict[str, list[E]] = defaultdict(list)
    by_session: dict[str, list[E]] = defaultdict(list)
    for event in events:
        if event.episode_id is not None:
            explicit[event.episode_id].append(event)
        else:
            by_session[event.session_id].append(event)

    groups: list[tuple[str, list[E]]] = []
    for key, members in explicit.items():
        groups.append((key, sorted(members, key=_order)))
    for members in by_session.values():
        members.sort(key=_order)
        current: list[E] = []
        for event in members:
            if current and event.created_at - current[-1].created_at > gap:
                groups.append((AUTO_PREFIX + current[0].id, current))
                current = []
            current.append(event)
        if current:
            groups.append((AUTO_PREFIX + current[0].id, current))
    groups.sort(key=lambda group: _order(group[1][0]))
    return groups


def _order(event: Event) -> tuple[float, str]:
    return (event.created_at, event.id)
