"""Sleep applies its plan in short parts, keeps its lease, and lets close() wait for it.

Real database files and, where another writer or a crash is the point, real processes.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemosyne import LeaseHeldError, Mnemosyne, StorageError, _closing
from mnemosyne.core.consolidation import Link, NewRecord, Plan
from mnemosyne.core.hold_back import ties
from mnemosyne.core.plan_parts import split_plan

DAY = 86_400.0
OLD = time.time() - 60 * DAY
EPISODES, PER = 40, 5
SRC = str(Path(__file__).resolve().parents[1] / "src")


def fill(db: Path) -> list[list[str]]:
    """``EPISODES`` closed episodes of ``PER`` events, a day apart: one summary each."""
    with Mnemosyne(session_id="agent", db_path=db, embedder="none", dedupe_window=0) as mem:
        return [[mem.remember(f"Episode {e} step {i}: deployed service {e} to region {i}.",
                              created_at=OLD + e * DAY + i * 60) for i in range(PER)] for e in range(EPISODES)]


def episode_states(db: Path, episodes: list[list[str]]) -> list[str]:
    """Per episode, 'summarised' (one active summary linked to every source, none of
    them active unless the summary keeps it in view) or 'untouched' (no summary, every
    event active); anything else is a half-applied episode."""
    with sqlite3.connect(db) as conn:
        status = dict(conn.execute("SELECT id, status FROM memories"))
        links = conn.execute("SELECT src_id, dst_id FROM memory_links WHERE kind = 'summarises'").fetchall()
    summaries_of: dict[str, set[str]] = {}
    for src, dst in links:
        summaries_of.setdefault(dst, set()).add(src)
    states = []
    for events in episodes:
        present = [e for e in events if e in status]
        summaries = set().union(*(summaries_of.get(e, set()) for e in present))
        if not summaries and all(status[e] == "active" for e in present):
            states.append("untouched")
        elif len(summaries) == 1 and all(summaries <= summaries_of.get(e, set()) for e in present):
            states.append("summarised")
        else:
            states.append(f"half-applied: {[status[e] for e in present]} {summaries}")
    return states


# -- splitting a plan (pure) -------------------------------------------------------

def _plan(groups: list[tuple[int, int]], singles: int) -> Plan:
    """A summary per (first, size) group of memories m<first>..., and decayed singles."""
    plan = Plan()
    for n, (first, size) in enumerate(groups):
        sources = tuple(f"m{first + i}" for i in range(size))
        plan.created.append(NewRecord(f"s{n}", "summary", "a", "session", "x", 0.5, 0.0, 0.0, 1.0,
                                      sources, tuple("x" for _ in sources)))
        for source in sources:
            plan.set(source, status="consolidated")
            plan.links.append(Link(f"s{n}", source, "summarises"))
    for i in range(singles):
        plan.set(f"d{i}", strength=0.5)
    return plan


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.integers(1, 30), max_size=20), singles=st.integers(0, 50), per_part=st.integers(1, 40))
def test_a_split_plan_keeps_every_change_once_and_never_cuts_a_tied_group(
        sizes: list[int], singles: int, per_part: int):
    starts = [sum(sizes[:n]) for n in range(len(sizes))]
    plan = _plan(list(zip(starts, sizes, strict=True)), singles)
    parts = split_plan(plan, per_part)
    assert [u for p in parts for u in p.updates] == list(plan.updates)
    assert [n for p in parts for n in p.created] == plan.created
    assert [link for p in parts for link in p.links] == plan.links
    for tie in ties(plan):
        assert sum(bool(tie & (set(p.updates) | {n.key for n in p.created})) for p in parts) == 1
    for part in parts:  # over the size only when one tied group is bigger by itself
        rows = len(part.updates) + len(part.created) + len(part.links)
        assert rows <= per_part or (len(part.created) == 1 and len(part.updates) == len(part.created[0].sources))


def test_an_empty_plan_is_one_empty_part():
    assert [p.empty for p in split_plan(Plan(), 10)] == [True]


# -- applying in parts -------------------------------------------------------------

def test_a_big_sleep_commits_in_parts_of_bounded_size_and_undoes_as_one_run(tmp_path: Path, monkeypatch):
    from mnemosyne.storage.sqlite import consolidation

    monkeypatch.setattr(consolidation, "ROWS_PER_PART", 20)
    db = tmp_path / "m.db"
    episodes = fill(db)
    with sqlite3.connect(db) as conn:
        before = conn.execute("SELECT id, status, strength, updated_at FROM memories ORDER BY id").fetchall()
    with Mnemosyne(session_id="agent", db_path=db, embedder="none") as mem:
        report = mem.sleep()
        assert report.summaries == EPISODES
        with sqlite3.connect(db) as conn:
            parts = [d for d in (json.loads(d) for (d,) in conn.execute(
                "SELECT detail FROM audit_log WHERE op = 'sleep' ORDER BY seq")) if "changed_rows" in d]
        # One transaction per episode's summary (11 rows), instead of one for all 440.
        assert len(parts) == EPISODES and all(p["changed_rows"] <= 20 for p in parts)
        assert sum(p["changed_rows"] for p in parts) == report.changed_rows
        assert set(episode_states(db, episodes)) == {"summarised"}
        assert mem.sleep().changed_rows == 0
        part_id = f"{report.id}:00001"
        with pytest.raises(Exception, match="a part of sleep run"):
            mem.undo_sleep(part_id)
        undone = mem.undo_sleep(report.id)
        assert undone["summaries"] == EPISODES and undone["parts"] == f"{EPISODES} of {EPISODES}"
    with sqlite3.connect(db) as conn:
        after = conn.execute("SELECT id, status, strength, updated_at FROM memories ORDER BY id").fetchall()
        assert after == before
        assert conn.execute("SELECT count(*) FROM sleep_runs WHERE status = 'applied'").fetchone()[0] == 1


_SLEEP_WITH_A_HOOK = """
import contextlib, os, sys, time, json
sys.path.insert(0, sys.argv[1])
from mnemosyne import Mnemosyne
from mnemosyne.storage.sqlite import connection, consolidation
consolidation.ROWS_PER_PART = 20
db, hook, after = sys.argv[2], sys.argv[3], int(sys.argv[4])
write = connection.Database.write
applied = 0
@contextlib.contextmanager
def write_then_hook(self, action="write", deadline=None):
    global applied
    with write(self, action, deadline) as conn:
        yield conn
    if action == "apply a sleep":
        applied += 1
        if applied == after:
            if hook == "crash":
                os.kill(os.getpid(), 9)
            open(db + ".paused", "w").close()  # another process writes now
            end = time.monotonic() + 60
            while not os.path.exists(db + ".go") and time.monotonic() < end:
                time.sleep(0.01)
connection.Database.write = write_then_hook
with Mnemosyne(session_id="agent", db_path=db, embedder="none") as mem:
    report = mem.sleep()
    print(json.dumps({"summaries": report.summaries, "changed_rows": report.changed_rows}))
"""


def _sleeper(db: Path, hook: str, after: int) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", _SLEEP_WITH_A_HOOK, SRC, str(db), hook, str(after)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for(path: Path, proc: subprocess.Popen[str]) -> None:
    end = time.monotonic() + 60
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < end
        time.sleep(0.01)


def test_another_process_writes_between_two_parts_and_sleep_respects_each_write(tmp_path: Path):
    db = tmp_path / "m.db"
    episodes = fill(db)
    proc = _sleeper(db, "pause", after=3)
    _wait_for(Path(f"{db}.paused"), proc)
    # The sleep is between two parts: a writer that waits 0.2 s at most gets in.
    with Mnemosyne(session_id="agent", db_path=db, embedder="none", busy_timeout=0.2) as writer:
        assert episode_states(db, episodes).count("summarised") == 3
        gone, edited = episodes[-1][2], episodes[-2][0]
        writer.forget(gone)
        writer.update(edited, content="Episode 38 step 0: the deploy was rolled back.")
        new = writer.remember("A new event while the sleep ran.")
    Path(f"{db}.go").touch()
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    # The two episodes tied to what changed wait for the next sleep; the rest is applied.
    assert json.loads(out)["summaries"] == EPISODES - 2
    states = episode_states(db, episodes)
    assert states[:-2] == ["summarised"] * (EPISODES - 2) and states[-2:] == ["untouched", "untouched"]
    with Mnemosyne(session_id="agent", db_path=db, embedder="none") as mem:
        assert mem.get(edited).content == "Episode 38 step 0: the deploy was rolled back."
        assert mem.get(new).status == "active"
        assert mem.sleep().summaries == 2  # the next sleep does the rest
        assert set(episode_states(db, episodes)) == {"summarised"}


def test_a_sleep_killed_between_two_parts_leaves_whole_episodes_and_the_next_sleep_finishes(tmp_path: Path):
    db = tmp_path / "m.db"
    episodes = fill(db)
    with sqlite3.connect(db) as conn:
        before = conn.execute("SELECT id, status, strength, updated_at FROM memories ORDER BY id").fetchall()
    proc = _sleeper(db, "crash", after=5)
    proc.communicate(timeout=120)
    assert proc.returncode == -9
    states = episode_states(db, episodes)
    assert states == ["summarised"] * 5 + ["untouched"] * (EPISODES - 5)
    with sqlite3.connect(db) as conn:
        (crashed, report), = conn.execute("SELECT id, report FROM sleep_runs WHERE id NOT LIKE '%:%'")
        assert json.loads(report)["parts"] == f"5 of {EPISODES}"
    # The killed sleeper's lease is taken at once (its process is gone); the next
    # sleep does the rest, and both runs undo, newest first, to the start.
    with Mnemosyne(session_id="agent", db_path=db, embedder="none") as mem:
        second = mem.sleep()
        assert second.summaries == EPISODES - 5
        assert set(episode_states(db, episodes)) == {"summarised"}
        assert mem.sleep().changed_rows == 0
        mem.undo_sleep(second.id)
        mem.undo_sleep(crashed)
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT id, status, strength, updated_at FROM memories ORDER BY id").fetchall() == before


# -- the lease ---------------------------------------------------------------------

_LONG_SLEEPER = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
import mnemosyne.consolidate as consolidate
from mnemosyne import LeaseHeldError, Mnemosyne, StorageError
consolidate.LEASE_TTL = 1.0
mem = Mnemosyne(session_id="agent", db_path=sys.argv[2], embedder="none")
original = mem._sleeper.snapshot
def slow_snapshot():
    open(sys.argv[2] + ".sleeping", "w").close()
    time.sleep(4)  # four times the lease
    return original()
mem._sleeper.snapshot = slow_snapshot
try:
    print(json.dumps({"summaries": mem.sleep().summaries}))
except LeaseHeldError as exc:
    print(json.dumps({"lease": str(exc)}))
"""


def test_a_sleep_longer_than_its_lease_keeps_it_and_another_process_is_refused(tmp_path: Path, monkeypatch):
    import mnemosyne.consolidate as consolidate

    monkeypatch.setattr(consolidate, "LEASE_TTL", 1.0)
    db = tmp_path / "m.db"
    fill(db)
    proc = subprocess.Popen([sys.executable, "-c", _LONG_SLEEPER, SRC, str(db)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for(Path(f"{db}.sleeping"), proc)
    time.sleep(2.5)  # well past the lease it took
    with Mnemosyne(session_id="agent", db_path=db, embedder="none") as mem:
        with pytest.raises(LeaseHeldError, match="another sleeper"):
            mem.sleep()
        out, err = proc.communicate(timeout=120)
        assert json.loads(out) == {"summaries": EPISODES}, err
        assert mem.sleep().changed_rows == 0  # and the lease was released


def test_a_sleep_whose_lease_was_taken_over_stops_without_writing(tmp_path: Path, monkeypatch):
    import mnemosyne.consolidate as consolidate
    from mnemosyne.storage.sqlite.consolidation import SleepStore

    monkeypatch.setattr(consolidate, "LEASE_TTL", 0.4)
    db = tmp_path / "m.db"
    fill(db)
    with sqlite3.connect(db) as conn:
        before = conn.execute("SELECT * FROM memories ORDER BY id").fetchall()
    with Mnemosyne(session_id="agent", db_path=db, embedder="none") as mem:
        original = mem._sleeper.snapshot

        def snapshot_then_lose_the_lease():
            with sqlite3.connect(db) as conn:  # as a process paused past its lease would find
                conn.execute("UPDATE leases SET holder = 'elsewhere:1:x', expires_at = ?", (time.time() + 60,))
            return original()

        mem._sleeper.snapshot = snapshot_then_lose_the_lease
        with pytest.raises(LeaseHeldError, match="taken over; this sleep changed nothing"):
            mem.sleep()
        assert SleepStore(mem._store).check_lease is not None
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT * FROM memories ORDER BY id").fetchall() == before
        assert conn.execute("SELECT holder FROM leases").fetchall() == [("elsewhere:1:x",)]


# -- close() while sleeping ---------------------------------------------------------

def sleeping_in_a_thread(
    db: Path, llm_delay: float, then: Callable[[], object] = lambda: None
) -> tuple[Mnemosyne, threading.Thread, list, dict]:
    """An instance on ``db`` sleeping in another thread with a summariser taking
    ``llm_delay`` a call (and ``then``), once the first call has begun: the instance,
    the thread, the summariser's calls, and what the sleep returned ("report") or
    raised ("error")."""
    mem = Mnemosyne(session_id="agent", db_path=db, embedder="none")
    calls: list = []
    out: dict[str, object] = {}

    def slow_llm(texts):
        calls.append(texts)
        time.sleep(llm_delay)
        then()
        return "A summary."

    def sleep() -> None:
        try:
            out["report"] = mem.sleep(summariser=slow_llm)
        except Exception as exc:  # the caller's assertions show it
            out["error"] = exc

    thread = threading.Thread(target=sleep)
    thread.start()
    deadline = time.monotonic() + 30
    while not calls and time.monotonic() < deadline:
        time.sleep(0.01)
    assert calls, "the sleep never called its summariser"
    return mem, thread, calls, out


def test_close_lets_a_sleep_under_way_in_another_thread_finish_and_release_its_lease(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(_closing, "SLEEP_GRACE_S", 25.0)  # within the grace, however slow the machine
    db = tmp_path / "m.db"
    fill(db)
    mem, thread, _, out = sleeping_in_a_thread(db, 0.05)
    mem.close()  # returns once the sleep has finished
    assert not thread.is_alive()
    thread.join()
    assert "error" not in out and out["report"].summaries == EPISODES  # type: ignore[attr-defined]
    with Mnemosyne(session_id="agent", db_path=db, embedder="none") as fresh:
        assert fresh.sleep().changed_rows == 0  # no LeaseHeldError for two minutes
    with pytest.raises(Exception, match="closed"):
        mem.sleep()


def test_close_ends_a_long_sleep_at_its_next_step_and_the_lease_is_free(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(_closing, "SLEEP_GRACE_S", 0.2)
    db = tmp_path / "m.db"
    fill(db)
    mem, thread, calls, out = sleeping_in_a_thread(db, 0.1)  # 40 episodes: 4 s
    mem.close()
    assert not thread.is_alive()
    assert isinstance(out.get("error"), StorageError), out
    assert "was closed; the next sleep does the rest" in str(out["error"])
    assert len(calls) < EPISODES
    with Mnemosyne(session_id="agent", db_path=db, embedder="none") as fresh:
        assert fresh.sleep().summaries == EPISODES  # no LeaseHeldError: it was released


def test_close_ends_a_sleep_waiting_on_one_long_summariser_call_and_the_lease_is_free(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(_closing, "SLEEP_GRACE_S", 0.2)
    monkeypatch.setattr(_closing, "CLOSE_WAIT_S", 20.0)  # what close() waits at most for calls under way
    db = tmp_path / "m.db"
    fill(db)
    answer = threading.Event()
    mem, thread, calls, out = sleeping_in_a_thread(db, 0.0, lambda: answer.wait(60))  # a call that hangs
    try:
        mem.close()
        # Before: the sleep waited out its summariser's 30 s timeout, close() gave up
        # after its own 20 s, and the sleep failed later on the closed database.
        assert not thread.is_alive()
        assert isinstance(out.get("error"), StorageError), out
        assert "sleep stopped before applying anything" in str(out["error"])
        assert len(calls) == 1
        with Mnemosyne(session_id="agent", db_path=db, embedder="none") as fresh:
            assert fresh.sleep().summaries == EPISODES  # no LeaseHeldError: it was released
    finally:
        answer.set()


def test_closing_from_inside_the_sleeping_thread_closes_once_that_sleep_has_finished(tmp_path: Path):
    db = tmp_path / "m.db"
    fill(db)
    mem = Mnemosyne(session_id="agent", db_path=db, embedder="none")
    original = mem._sleeper.snapshot

    def close_then_snapshot():
        mem.close()  # a signal handler's close(), say, run by the thread that sleeps
        return original()

    mem._sleeper.snapshot = close_then_snapshot
    reports = []
    sleeper = threading.Thread(target=lambda: reports.append(mem.sleep()), daemon=True)
    sleeper.start()
    sleeper.join(60)
    assert not sleeper.is_alive(), "close() inside a sleep waited for that sleep for ever"
    assert reports and reports[0].changed_rows > 0  # the sleep under way finished
    with pytest.raises(StorageError, match="closed"):
        mem.recall("anything")
    with Mnemosyne(session_id="agent", db_path=db, embedder="none") as again:
        again.sleep()  # its lease was released
