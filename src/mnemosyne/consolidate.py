"""Running sleep: lease, snapshot, plan, optional summariser, one transaction.

    report = mem.sleep()
    print(report.active_before, "->", report.active_after)
    mem.undo_sleep(report.id)          # everything back as it was before that sleep

The pure planner (:func:`mnemosyne.core.consolidation.plan_consolidation`) decides;
this module only does the I/O around it. A pluggable summariser is any callable
``texts -> str``; it runs with a timeout and never while the database is locked.
An OpenAI-compatible client works, for example::

    def llm_summary(texts):
        reply = client.chat.completions.create(model="llama3.2", messages=[
            {"role": "user", "content": "Summarise in 3 sentences:\\n" + "\\n".join(texts)}])
        return reply.choices[0].message.content

    mem.sleep(summariser=llm_summary, summariser_timeout=20)
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any

import numpy as np

from . import _closing, background
from .core.consolidation import Plan, SleepPolicy, consolidation_rule, judge_stored_summaries, plan_consolidation
from .core.ids import new_id
from .core.summarise import _cut, split_header
from .core.timeutil import from_timestamp
from .core.validation import check_flag, check_seconds, finite_number
from .errors import DatabaseBusyError, InvalidInputError, LeaseHeldError, StorageError
from .models import SleepReport
from .storage.base import StopSignal
from .storage.sqlite.consolidation import Run, SleepStore

log = logging.getLogger("mnemosyne.sleep")

Summariser = Callable[[Sequence[str]], str]
LEASE_TTL = 120.0


class SleepStopped(Exception):
    """A sleep asked to stop (its instance is closing) ended early: before applying
    anything, or between two parts of its apply (what those parts did stands)."""


def run_sleep(
    sleeper: SleepStore,
    policy: SleepPolicy,
    *,
    summariser: Summariser | None = None,
    summariser_timeout: float = 30.0,
    vectors: Callable[[Sequence[str]], Mapping[str, np.ndarray] | None] | None = None,
    dry_run: bool = False,
    now: float | None = None,
    stop: StopSignal | None = None,
) -> SleepReport:
    """One consolidation pass over the whole database; see :meth:`Mnemosyne.sleep`.

    ``stop``, once set, ends the pass at its next step (before it applies anything,
    or between two parts of its apply) with :class:`SleepStopped`, having released
    the lease; what it applied before stands.
    """
    if dry_run:
        # A dry run writes nothing, so it takes no lease: it works on a read-only file
        # and beside other dry runs. It still defers to a sleep under way, whose run
        # would change what it reports.
        sleeper.check_lease()
        return _consolidate(sleeper, policy, None, summariser, summariser_timeout, vectors, now, stop)
    holder = f"{socket.gethostname()}:{os.getpid()}:{new_id()[-12:]}"
    sleeper.acquire_lease(holder, LEASE_TTL)
    try:
        with _LeaseKeeper(sleeper, holder, LEASE_TTL) as lease:
            return _consolidate(sleeper, policy, lease, summariser, summariser_timeout, vectors, now, stop)
    finally:  # after the keeper has stopped, which would otherwise take it again
        sleeper.release_lease(holder)


def _consolidate(
    sleeper: SleepStore, policy: SleepPolicy, lease: _LeaseKeeper | None, summariser: Summariser | None,
    summariser_timeout: float, vectors: Callable[[Sequence[str]], Mapping[str, np.ndarray] | None] | None,
    now: float | None, stop: StopSignal | None,
) -> SleepReport:
    """Snapshot, plan and apply (no lease: a dry run, which applies nothing)."""
    started = time.time()

    def check_stop(done: int = 0, parts: int = 1) -> None:
        if lease is not None:
            lease.check(done, parts)
        if stop is not None and stop.is_set():
            raise SleepStopped(f"sleep stopped after {done} of its {parts} parts" if done else
                               "sleep stopped before applying anything")

    check_stop()
    snapshot = sleeper.snapshot()
    vecs = vectors([r.id for r in snapshot.records]) if vectors is not None else None
    check_stop()
    plan = plan_consolidation(
        snapshot.records, started if now is None else now, policy, vectors=vecs,
        summarised=snapshot.summarised, open_episodes=snapshot.open_episodes,
        episode_labels=snapshot.labels, unshared=snapshot.unshared, stored_summaries=snapshot.summaries,
    )
    check_stop()
    run_id = new_id()
    if lease is None:
        # The rule counts say what a real run would do; the fields about the
        # database itself (active_after, changed_rows) say what it is: untouched.
        active = sleeper.count_active()
        return _report(run_id, started, plan.report_counts(), active, active, 0, 0, dry_run=True)
    contents: dict[str, str] = {}
    fallbacks = 0
    if summariser is not None and any(new.kind == "summary" for new in plan.created):
        contents, fallbacks = _summarise(plan, summariser, summariser_timeout, policy, check_stop)
        judge_stored_summaries(plan, contents, snapshot.records, started if now is None else now, policy)
    new_ids = {new.key: new_id() for new in plan.created}
    check_stop()
    # Memories edited or forgotten while it planned keep their edits; what the
    # plan ties to them is held back for the next sleep, and the rest applied.
    run = Run(run_id, lease.holder, lease.ttl, started,
              {"summariser_fallbacks": fallbacks, "rule": consolidation_rule(policy)})
    applied = sleeper.apply(plan, snapshot, run, contents, new_ids, between=check_stop)
    if applied.held_back:
        log.info("sleep: %d memories changed while it planned; they wait for the next sleep",
                 len(applied.held_back))
    return _report(run_id, started, applied.counts, applied.active_before,
                   applied.active_after, applied.changed_rows, fallbacks)


class _LeaseKeeper:
    """Renews the sleep lease every quarter of its time to live, from a thread, while
    the sleep snapshots, plans, summarises and applies: a sleep longer than the lease
    (200k memories on a 2-core machine) would otherwise be taken over by another
    process's sleep, and two auto-sleeping processes took it from each other for ever.
    """

    def __init__(self, sleeper: SleepStore, holder: str, ttl: float) -> None:
        self.holder, self.ttl = holder, ttl
        self._sleeper = sleeper
        self._done = threading.Event()
        self._lost: LeaseHeldError | None = None
        self._thread = threading.Thread(target=self._renew, name="mnemosyne-sleep-lease", daemon=True)

    def __enter__(self) -> _LeaseKeeper:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._done.set()
        self._thread.join()

    def check(self, done: int, parts: int) -> None:
        """Raise :class:`LeaseHeldError` if another sleeper took the lease over."""
        if self._lost is not None:
            raise LeaseHeldError(
                "the sleep lease was taken over; this sleep changed nothing" if not done else
                f"the sleep lease was taken over; this sleep stopped after {done} of its {parts} parts, "
                "and the next sleep does the rest"
            ) from self._lost

    def _renew(self) -> None:
        while not self._done.wait(self.ttl / 4):
            try:
                self._sleeper.acquire_lease(self.holder, self.ttl)
            except LeaseHeldError as exc:
                self._lost = exc
                return
            except StorageError as exc:  # busy, or closing: the next turn tries again
                log.debug("sleep: renewing the lease failed: %s", exc)


def _summarise(
    plan: Plan, summariser: Summariser, timeout: float, policy: SleepPolicy, check_stop: Callable[[], None]
) -> tuple[dict[str, str], int]:
    """Call the user's summariser per episode, outside any lock; fall back on failure."""
    contents: dict[str, str] = {}
    fallbacks = 0
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mnemosyne-summariser")
    try:
        for summary in (new for new in plan.created if new.kind == "summary"):
            check_stop()
            future = pool.submit(summariser, summary.condensed_texts)
            if not _answered(future, timeout, check_stop):
                fallbacks += 1
                log.warning("sleep: summariser timed out after %ss; kept the extractive summary", timeout)
                continue
            try:
                text = future.result()
                if not isinstance(text, str) or not text.strip():
                    raise ValueError("the summariser returned no text")
                header, _ = split_header(summary.content)
                contents[summary.key] = _cut(header + text.strip(), policy.summary_max_chars * 2)
            except Exception as exc:  # any failure of user code falls back, never loses the sleep
                fallbacks += 1
                log.warning("sleep: summariser failed (%s); kept the extractive summary", exc)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    return contents, fallbacks


# How often a sleep waiting for its summariser looks whether it should stop: close()
# asks it to after ``_closing.SLEEP_GRACE_S``, and one call may take the whole
# summariser timeout (30 s by default, as long as close() waits for calls at all).
_STOP_POLL_S = 0.1


def _answered(future: Future[str], timeout: float, check_stop: Callable[[], None]) -> bool:
    """Whether the summariser answered (or failed) within ``timeout``, waited for in
    slices so that a stop between them ends the wait: ``check_stop`` raises. The call
    itself, user code, runs on in its thread."""
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        if wait([future], timeout=min(_STOP_POLL_S, left)).done:
            return True
        check_stop()
    return future.done()


def _report(run_id: str, started: float, counts: dict[str, int], before: int, after: int, changed: int,
            fallbacks: int, dry_run: bool = False) -> SleepReport:
    return SleepReport(
        id=run_id, started_at=from_timestamp(started), finished_at=from_timestamp(time.time()),
        active_before=before, active_after=after, changed_rows=changed,
        summariser_fallbacks=fallbacks, dry_run=dry_run, **counts,
    )


class AutoSleeper:
    """Runs ``sleep`` in a daemon thread once writes have been quiet for ``idle`` seconds.

    ``remember``/``update``/``forget`` only call :meth:`touch` (a timestamp), so they
    never wait on it. Another process holding the lease just means skipping a turn.
    """

    def __init__(self, sleep: Callable[[threading.Event], Any], idle: float) -> None:
        if idle <= 0:
            raise ValueError("auto_sleep idle period must be > 0 seconds")
        self.idle = idle
        self._sleep = sleep
        self._last_write = time.monotonic()
        self._dirty = False
        self._stop = threading.Event()
        self.runs = 0
        self.last_report: SleepReport | None = None
        self.last_error: BaseException | None = None
        self._thread = threading.Thread(target=self._loop, name="mnemosyne-auto-sleep", daemon=True)
        self._thread.start()
        background.stop_at_exit(self)

    def touch(self) -> None:
        self._last_write = time.monotonic()
        self._dirty = True

    def halt(self) -> None:
        """Make a sleep under way end at its next step (without waiting)."""
        self._stop.set()

    def stop(self) -> None:
        """Stop and wait for the thread. A sleep under way ends at its next step and
        releases its lease: the store must not close under it, or the lease would be
        left held and every process's sleep refused until it expires."""
        self.halt()
        if self._thread is not threading.current_thread():
            self._thread.join()

    def _loop(self) -> None:
        while not self._stop.wait(min(self.idle / 4, 5.0)):
            if not self._dirty or time.monotonic() - self._last_write < self.idle:
                continue
            self._dirty = False
            try:
                self.last_report = self._sleep(self._stop)
                self.runs += 1
            except SleepStopped:
                return
            except LeaseHeldError:
                self._dirty = True  # someone else is sleeping; try again later
            except Exception as exc:  # the thread must survive; the error is kept and logged
                self.last_error = exc
                log.exception("auto-sleep failed")


def _while_alive(owner: weakref.ref[SleepMixin]) -> Callable[[threading.Event], SleepReport]:
    """Sleep for ``owner``, or end the auto-sleep once it has been collected."""
    def sleep(stop: threading.Event) -> SleepReport:
        mem = owner()
        if mem is None:
            raise SleepStopped("the instance was dropped")
        return mem._sleep(stop=stop)
    return sleep


class SleepMixin:
    """Sleep on the facade; mixed into :class:`mnemosyne.Mnemosyne`."""

    _store: Any
    _gate: _closing.Gate
    session_id: str
    sleep_policy: SleepPolicy
    _auto_sleeper: AutoSleeper | None = None

    @staticmethod
    def _check_sleep_args(policy: object, auto_sleep: object) -> tuple[SleepPolicy, float | None]:
        """The policy to use and the auto-sleep idle period (None: no auto-sleep)."""
        policy = _check_policy(policy, "sleep_policy") or SleepPolicy()
        if auto_sleep is None or auto_sleep is False:
            return policy, None
        idle = DEFAULT_IDLE if auto_sleep is True else finite_number(auto_sleep)
        if idle is None or idle <= 0:
            raise InvalidInputError(
                f"auto_sleep must be True, False/None or an idle period in seconds > 0, got {auto_sleep!r}"
            )
        return policy, idle

    def _init_sleep(self, policy: SleepPolicy, idle: float | None) -> None:
        self.sleep_policy = policy
        self._sleeper = SleepStore(self._store)
        if idle is not None:
            # The thread holds the instance only while it sleeps: one dropped without
            # close() is collected (its files closed), and its auto-sleep ends.
            self._auto_sleeper = AutoSleeper(_while_alive(weakref.ref(self)), idle)
            weakref.finalize(self, self._auto_sleeper.halt)

    def sleep(
        self,
        *,
        summariser: Summariser | None = None,
        summariser_timeout: float = 30.0,
        policy: SleepPolicy | None = None,
        dry_run: bool = False,
    ) -> SleepReport:
        """Consolidate the whole database now and report what changed.

        Merges near-duplicates, summarises closed episodes, decays strength,
        promotes recurring knowledge, supersedes stale facts and expires what is
        past ``valid_until``. Nothing is deleted: originals stay, hidden from
        default recall, and :meth:`undo_sleep` reverses the run. Then the text
        indexes' segments are merged, so recall reads fewer of them. Raises
        :class:`LeaseHeldError` if another process is already sleeping, and
        :class:`StorageError` if the instance was closed while it slept: after
        ``_closing.SLEEP_GRACE_S``, the sleep ends at its next step, what it
        applied stands, and the next sleep does the rest.

        >>> report = mem.sleep()
        >>> report.active_before, report.active_after, report.id
        (1200, 640, '0193...')
        """
        if summariser is not None and not callable(summariser):
            raise InvalidInputError("summariser must be a callable taking a list of texts and returning text")
        # A longer wait is an OverflowError inside the thread pool.
        timeout = check_seconds(summariser_timeout, "summariser_timeout", positive=True, maximum=threading.TIMEOUT_MAX)
        dry_run = check_flag(dry_run, "dry_run")
        try:
            return self._sleep(summariser=summariser, summariser_timeout=timeout, policy=policy, dry_run=dry_run,
                               stop=_closing.Stopping(self._gate))
        except SleepStopped as stopped:
            path = self._store.path
            raise StorageError(f"{stopped}: {path} was closed; the next sleep does the rest", path) from None

    def _sleep(
        self,
        *,
        summariser: Summariser | None = None,
        summariser_timeout: float = 30.0,
        policy: SleepPolicy | None = None,
        dry_run: bool = False,
        stop: StopSignal | None = None,
    ) -> SleepReport:
        report = run_sleep(
            self._sleeper, _check_policy(policy, "policy") or self.sleep_policy, summariser=summariser,
            summariser_timeout=summariser_timeout, vectors=self._sleep_vectors, dry_run=dry_run, stop=stop,
        )
        if not dry_run:  # idle time is when to tidy the text indexes that recall reads
            try:
                self._store.index_missing_text()
                steps = self._store.compact_text_indexes(stop=stop)
                log.debug("sleep: text indexes merged in %d steps", steps)
            except DatabaseBusyError as exc:  # the consolidation stands; merging can wait for the next sleep
                log.warning("sleep: merging the text indexes postponed: %s", exc)
        self._after_sleep(report)
        return report

    def undo_sleep(self, report_id: str) -> dict[str, Any]:
        """Put back every memory as it was before sleep run ``report_id``; return its report.

        Runs are undone newest first: undoing one that a later sleep built on is
        refused with :class:`InvalidInputError` naming the later run.

        >>> mem.undo_sleep(report.id)
        """
        if not isinstance(report_id, str) or not report_id.strip():
            raise InvalidInputError(f"report_id must be the id of a SleepReport, got {report_id!r}")
        return self._sleeper.undo(report_id, self.session_id)

    def _sleep_vectors(self, memory_ids: Sequence[str]) -> Mapping[str, np.ndarray] | None:
        """Embedding per memory id for the near-duplicate rule; none without an embedder."""
        return None

    def _after_sleep(self, report: SleepReport) -> None:
        """Called after each sleep run (the facade embeds new summaries here)."""

    def _touch_auto_sleep(self) -> None:
        if self._auto_sleeper is not None:
            self._auto_sleeper.touch()

    def _stop_auto_sleep(self) -> None:
        if self._auto_sleeper is not None:
            self._auto_sleeper.stop()


def _check_policy(policy: object, name: str) -> SleepPolicy | None:
    if policy is not None and not isinstance(policy, SleepPolicy):
        raise InvalidInputError(
            f"{name} must be a mnemosyne.core.consolidation.SleepPolicy or None, got {policy!r}"
        )
    return policy


DEFAULT_IDLE = 300.0
