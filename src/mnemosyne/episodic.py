"""Episodic memory on the facade: episodes, timelines and recall context.

Mixed into :class:`mnemosyne.Mnemosyne`; every method here is public API.
"""

from __future__ import annotations

import bisect
import contextvars
import dataclasses
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from .core.episodes import AUTO_PREFIX, split_episodes
from .core.ids import new_id
from .core.timeutil import TimeLike, first_stored_at, from_timestamp, now, time_before, time_range
from .core.validation import MAX_CONTEXT, check_label, check_limit, check_seconds, check_session_id, check_whole
from .errors import MnemosyneError
from .models import Episode, Memory
from .storage.sqlite.episodic import EpisodicStore, Event

if TYPE_CHECKING:
    from .storage.sqlite import SQLiteStore

DEFAULT_EPISODE_GAP = 1800.0
log = logging.getLogger("mnemosyne")


@dataclasses.dataclass(frozen=True, slots=True)
class _Event:
    id: str
    session_id: str
    created_at: float
    episode_id: str | None


@dataclasses.dataclass(slots=True)
class _OpenEpisode:
    """The episode a block entered. An asyncio task started inside the block inherits
    it (tasks copy their context) and may outlive the block: once the block ends,
    what the task remembers is no longer part of the episode, which sleep may
    already have summarised."""

    id: str
    open: bool = True


class EpisodicMixin:
    session_id: str
    _store: SQLiteStore
    episode_gap: float = DEFAULT_EPISODE_GAP

    @staticmethod
    def _check_episode_gap(episode_gap: object) -> float:
        return check_seconds(episode_gap, "episode_gap", positive=True)

    def _init_episodic(self, episode_gap: float) -> None:
        self.episode_gap = episode_gap
        self._episodic = EpisodicStore(self._store)
        # A context variable, so threads and asyncio tasks each have their own episode.
        self._current_episode: contextvars.ContextVar[_OpenEpisode | None] = contextvars.ContextVar(
            f"mnemosyne-episode-{id(self)}", default=None
        )

    @contextmanager
    def episode(self, label: str) -> Iterator[str]:
        """Group everything remembered inside the block into one named episode.

        >>> with mem.episode("deploy v2"):
        ...     mem.remember("Started the v2 rollout")
        ...     mem.remember("Rollout finished, error rate flat")

        Yields the episode id. Sleep summarises an episode only after it has ended.
        """
        label = check_label(label, "label")
        episode_id = new_id()
        started_at = self._episodic.start_episode(episode_id, self.session_id, label)
        current = _OpenEpisode(episode_id)
        token = self._current_episode.set(current)
        block_error: BaseException | None = None
        try:
            yield episode_id
        except BaseException as error:
            block_error = error
            raise
        finally:
            current.open = False
            self._current_episode.reset(token)
            try:
                # Its error names what failed: recording the end, after the memories.
                self._episodic.end_episode(
                    episode_id, self.session_id, label, started_at,
                    f"record the end of episode {label!r} (all remembered inside it is stored)",
                )
            except MnemosyneError as error:
                if block_error is None:
                    raise
                # The block's own error is what the caller must see and can catch.
                log.warning("episode %r was not marked ended (%s); sleep takes it as ended once "
                            "SleepPolicy.abandoned_after has passed", label, error)

    def timeline(
        self,
        session_id: str | None = None,
        since: TimeLike | None = None,
        until: TimeLike | None = None,
        limit: int | None = 100,
        before: TimeLike | None = None,
    ) -> list[Memory]:
        """A session's events (default: this one) in the order they happened: the
        latest ``limit`` of them (None: all), so that after a restart the newest
        events are never the ones cut. ``since`` and ``until`` are inclusive,
        ``before`` is exclusive: pass the first event's ``created_at`` as ``before``
        to read the page before it. A page never splits the events of one instant:
        every event at its first one's time (to the microsecond) is in it, so it may
        hold more than ``limit``, and paging back with ``before`` meets each event
        once and ends.

        Originals that sleep consolidated, superseded or expired are included: the
        timeline is the history, not the current view. Another session's events are
        shown only if global.

        >>> page = mem.timeline(limit=50)
        >>> earlier = mem.timeline(limit=50, before=page[0].created_at)
        """
        since_ts, until_ts = time_range(since, until)
        before_ts = time_before(before, since)
        limit = check_limit(limit)
        session = self.session_id if session_id is None else check_session_id(session_id, self._store.holds_session)
        events = self._episodic.events(self.session_id, session, since_ts, until_ts, limit, before=before_ts)
        if limit is not None and len(events) == limit:
            events = self._same_instant_before(session, events, since_ts, before_ts) + events
        return [event.memory for event in events]

    def _same_instant_before(
        self, session: str, page: list[Event], since_ts: float | None, before_ts: float | None
    ) -> list[Event]:
        """The events the limit cut at the same time (to the microsecond) as
        ``page``'s first: those a page back (``before`` = that first ``created_at``)
        leaves out."""
        first = page[0]
        start = first_stored_at(first.memory.created_at)
        if since_ts is not None:
            start = max(start, since_ts)
        shown = {event.memory.id for event in page}
        # ``until`` the stored time itself: the page's own first, and those sharing it.
        same = self._episodic.events(self.session_id, session, start, first.at, None, before=before_ts)
        return [event for event in same if event.memory.id not in shown]

    def episodes(
        self,
        session_id: str | None = None,
        since: TimeLike | None = None,
        until: TimeLike | None = None,
    ) -> list[Episode]:
        """A session's episodes, oldest first, with size, bounds and summary if any.

        >>> for ep in mem.episodes():
        ...     print(ep.label, ep.started_at, ep.size, ep.summary)
        """
        since_ts, until_ts = time_range(since, until)
        session = self.session_id if session_id is None else check_session_id(session_id, self._store.holds_session)
        rows = self._episodic.events(self.session_id, session, since_ts, until_ts, None)
        summaries = self._episodic.summaries_of(self.session_id, [event.memory.id for event in rows])
        grouped_by = _summarised_episodes(rows, summaries)
        summarised = set(grouped_by.values())
        events = [_Event(m.id, m.session_id, at, ep or grouped_by.get(m.id)) for m, ep, at in rows]
        explicit = self._episodic.episode_rows(session)
        result = []
        for key, members in split_episodes(events, self.episode_gap):
            if key in summarised:  # sleep named it as a time-gap episode
                key = AUTO_PREFIX + members[0].id
            label, ended = explicit.get(key, (None, None))
            if session != self.session_id:
                label = None  # another session's words: its label is as private as its events
            end = members[-1].created_at
            summary = next((summaries[m.id] for m in members if m.id in summaries), None)
            # A summary says sleep found the episode over: a block whose process died
            # inside it never records its end, and sleep gives up waiting for it.
            closed = summary is not None or (
                (ended is not None) if key in explicit else end + self.episode_gap <= now()
            )
            result.append(Episode(
                id=key, session_id=session, label=label, started_at=from_timestamp(members[0].created_at),
                ended_at=from_timestamp(end), size=len(members), closed=closed, summary=summary,
                event_ids=tuple(m.id for m in members),
            ))
        return result

    def _attach_context(self, results: list[Memory], context: int) -> list[Memory]:
        """Give each hit its neighbouring events; the ranking is left untouched."""
        return [dataclasses.replace(m, context=self._episodic.neighbours(self.session_id, m, context))
                for m in results]

    def _episode_for_new_memory(self) -> str | None:
        current = self._current_episode.get()
        return current.id if current is not None and current.open else None

    @staticmethod
    def _check_context(context: object) -> int:
        return check_whole(context, "context", 0, MAX_CONTEXT)


def _summarised_episodes(rows: list[Event], summaries: dict[str, Memory]) -> dict[str, str]:
    """Event id -> the id of the summary whose episode it is in.

    The events one summary condensed are the episode sleep found (by its own policy's
    gap, among the session's own events): they stay one episode, so every summary is
    reached, whatever else falls between them. So does every other event of no
    explicit episode within their time span, as it was before that sleep: a repeat
    sleep merged into one of them (linked to its kept copy, not to the summary), and
    one sleep does not summarise (a global memory, one that expires), which would
    otherwise become an episode of its own inside this one.
    """
    grouped = {event_id: summary.id for event_id, summary in summaries.items()}
    spans: dict[str, tuple[float, float]] = {}
    for memory, _, at in rows:
        if memory.id in grouped:
            first, last = spans.get(grouped[memory.id], (at, at))
            spans[grouped[memory.id]] = (min(first, at), max(last, at))
    ordered = sorted((first, last, key) for key, (first, last) in spans.items())
    starts = [first for first, _, _ in ordered]
    for memory, episode_id, at in rows:
        if episode_id is None and memory.id not in grouped:
            i = bisect.bisect_right(starts, at) - 1
            if i >= 0 and at <= ordered[i][1]:
                grouped[memory.id] = ordered[i][2]
    return grouped

