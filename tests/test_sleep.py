"""sleep() on real databases: effect, idempotency, undo, lease, auto-sleep, CLI."""

from __future__ import annotations

import gc
import json
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mnemosyne import InvalidInputError, LeaseHeldError, Mnemosyne, SleepReport
from mnemosyne.core.consolidation import SleepPolicy
from mnemosyne.storage.sqlite.consolidation import SleepStore
from mnemosyne.storage.sqlite.search import FTS_TABLES
from mnemosyne.testing import HashEmbedder

DAY = 86_400.0
OLD = time.time() - 30 * DAY


def fill(mem: Mnemosyne, episodes: int = 3, per: int = 6) -> list[str]:
    ids = []
    for e in range(episodes):
        for i in range(per):
            ids.append(mem.remember(
                f"Note {e * 10 + i}: reviewed the checkout redesign, palette option {i}.",
                created_at=OLD + e * DAY + i * 60,
            ))
    return ids


def rows(db: Path) -> dict[str, tuple]:
    with sqlite3.connect(db) as conn:
        memories = {r[0]: r for r in conn.execute("SELECT id, * FROM memories ORDER BY id")}
        links = sorted(conn.execute("SELECT src_id, dst_id, kind FROM memory_links"))
    return {"memories": memories, "links": links}


@pytest.fixture
def mem(tmp_path: Path):
    # Sleep merges duplicates itself: store every repeat, as an agent without retries would.
    with Mnemosyne(session_id="agent", db_path=tmp_path / "m.db", dedupe_window=0) as instance:
        yield instance


@pytest.mark.parametrize("marked", [
    "Deploy the billing service to production tonight 🚫",
    "Just deploy the billing service to production tonight",
    "I deploy the billing service to production tonight",
])
def test_a_status_symbol_a_restriction_or_a_subject_added_is_no_repeat(mem: Mnemosyne, marked: str):
    plain = mem.remember("Deploy the billing service to production tonight", created_at=time.time() - 3 * 3600)
    other = mem.remember(marked, created_at=time.time() - 2 * 3600)
    assert mem.sleep().merged == 0
    assert mem.get(plain).status == mem.get(other).status == "active"
    assert {m.id for m in mem.recall("billing service to production tonight")} == {plain, other}


def test_sleep_condenses_and_stats_show_it(mem: Mnemosyne):
    ids = fill(mem)
    mem.remember("note 3: Reviewed the checkout redesign, palette option 3!",
                 created_at=OLD + 2.5 * DAY)  # a restatement, days later
    assert mem.get_stats().last_sleep_at is None
    report = mem.sleep()
    assert (report.active_before, report.merged, report.summaries, report.summarised) == (19, 1, 3, 18)
    assert report.active_after == 3 and report.changed_rows == 22
    stats = mem.get_stats()
    assert stats.by_status == {"active": 3, "consolidated": 19}
    assert stats.by_kind == {"episodic": 19, "summary": 3}
    assert stats.last_sleep_at is not None and stats.total == 22
    # Originals are hidden from default recall but found on request, unchanged.
    assert {m.kind for m in mem.recall("checkout redesign palette", top_k=50)} == {"summary"}
    found = {m.id for m in mem.recall("checkout redesign palette", top_k=50, include_consolidated=True)}
    assert set(ids) <= found
    assert mem.get(ids[0]).status == "consolidated"


def test_second_sleep_changes_nothing(mem: Mnemosyne, tmp_path: Path):
    fill(mem)
    mem.sleep()
    before = rows(tmp_path / "m.db")
    report = mem.sleep()
    assert report.changed_rows == 0 and report.active_before == report.active_after
    assert rows(tmp_path / "m.db") == before


def test_a_repeat_of_the_global_copy_a_merge_keeps_is_merged_by_the_same_sleep(tmp_path: Path):
    # The global copy adds a word to the earlier session note, and the reminder one
    # more: too many for the note, the reminder repeats only the global copy (by
    # words: no vectors). That copy is what the merge keeps, so the reminder is
    # merged now, not by the next sleep.
    mem = Mnemosyne(session_id="agent", db_path=tmp_path / "m.db", dedupe_window=0, embedder="none")
    note = mem.remember("staging database listens on port 5432", created_at=OLD)
    kept = mem.remember("staging database listens on port 5432 fyi", scope="global", created_at=OLD + 60)
    reminder = mem.remember("reminder: staging database listens on port 5432 fyi", created_at=OLD + 120)
    assert mem.sleep().merged == 2
    assert [mem.get(i).status for i in (note, kept, reminder)] == ["consolidated", "active", "consolidated"]
    assert mem.sleep().changed_rows == 0
    # A note written between the first and the global copy that repeats only the
    # global copy: kept, that copy takes the first one's time, before the note.
    between = mem.remember("staging cache listens on port 6379", created_at=OLD + 200)
    mem.remember("staging cache listens on port 6379 fyi again", created_at=OLD + 260)
    mem.remember("staging cache listens on port 6379 fyi", scope="global", created_at=OLD + 320)
    assert mem.sleep().merged == 2 and mem.get(between).status == "consolidated"
    assert mem.sleep().changed_rows == 0
    # ... and a group of such notes (two copies of one expiring note).
    until = time.time() + 86_400
    mem.remember("staging queue listens on port 5672", created_at=OLD + 400)
    copies = [mem.remember("staging queue listens on port 5672 fyi again", created_at=OLD + 460 + i,
                           valid_until=until, allow_duplicate=True) for i in range(2)]
    mem.remember("staging queue listens on port 5672 fyi", scope="global", created_at=OLD + 520)
    assert mem.sleep().merged == 3 and {mem.get(c).status for c in copies} == {"consolidated"}
    assert mem.sleep().changed_rows == 0
    mem.close()


# Kept copies that repeat each other, each kept by a group of texts the other does
# not repeat (being a repeat is not transitive): one sleep merges them all.
BRIDGED = {
    # One session: the reminder joins the earlier reminder, the "fyi" copy the plain note.
    "one session": ([("s", "reminder: {}", "session"), ("s", "{}", "session"), ("s", "{} fyi", "global"),
                     ("s", "reminder: {} fyi", "global")], SleepPolicy()),
    # Sharing: each of s2's global copies folds in another session's copy of its words.
    "sharing": ([("s1", "fyi {}", "session"), ("s4", "Fyi {} fyi.", "session"), ("s2", "fyi {}", "global"),
                 ("s2", "Fyi {} fyi.", "global")], SleepPolicy(promote_recurring=True)),
}


@pytest.mark.parametrize("embedder", ["none", "hash"])
@pytest.mark.parametrize("shape", sorted(BRIDGED))
def test_kept_copies_that_repeat_each_other_merge_in_one_sleep_that_undo_puts_back(tmp_path: Path, shape: str,
                                                                                  embedder: str):
    notes, policy = BRIDGED[shape]
    db = tmp_path / "m.db"
    agents = {session: Mnemosyne(session_id=session, db_path=db, dedupe_window=0,
                                 embedder=HashEmbedder() if embedder == "hash" else "none")
              for session in {session for session, _, _ in notes}}
    try:
        ids = [agents[session].remember(text.format("staging database listens on port 5432"), scope=scope,
                                        created_at=OLD + n * 600)
               for n, (session, text, scope) in enumerate(notes)]
        before = rows(db)
        sleeper = agents[notes[-1][0]]
        report = sleeper.sleep(policy=policy)
        assert report.merged == 3 and report.active_after == 1
        with sqlite3.connect(db) as conn:
            (kept,) = conn.execute("SELECT id, occurrences FROM memories WHERE status = 'active'").fetchall()
        assert kept == (ids[2], 4)  # the first global copy, counting all four
        after = rows(db)
        assert sleeper.sleep(policy=policy).changed_rows == 0 and rows(db) == after
        sleeper.undo_sleep(report.id)
        assert rows(db) == before
    finally:
        for agent in agents.values():
            agent.close()


def ranked_matches(db: Path, expression: str) -> list[tuple[int, float]]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT rowid, bm25(memories_fts) FROM memories_fts WHERE memories_fts MATCH ? "
                            "ORDER BY rank", (expression,)).fetchall()


def test_sleep_merges_the_text_indexes_and_text_search_finds_the_same(tmp_path: Path):
    db, copy = tmp_path / "m.db", tmp_path / "copy.db"
    with Mnemosyne(session_id="agent", db_path=db, embedder="none") as mem:
        for i in range(80):  # a transaction each, so many small index segments
            mem.remember(f"release note {i}: shipped build {i % 7} to region {i % 5}")
    copy.write_bytes(db.read_bytes())  # closed: the write-ahead log is in the file
    before = ranked_matches(db, "build OR region OR shipped")
    with Mnemosyne(session_id="agent", db_path=copy, embedder="none") as other:
        assert other._store.compact_text_indexes() > len(FTS_TABLES)  # there was merging to do
    assert ranked_matches(copy, "build OR region OR shipped") == before
    with Mnemosyne(session_id="agent", db_path=db, embedder="none") as mem:
        mem.sleep()
        assert mem._store.compact_text_indexes() == len(FTS_TABLES)  # one step per index, nothing to merge
    assert ranked_matches(db, "build OR region OR shipped") == before


def test_a_busy_database_postpones_merging_the_text_indexes_not_the_sleep(tmp_path: Path, caplog, monkeypatch):
    db = tmp_path / "m.db"
    with Mnemosyne(session_id="agent", db_path=db, embedder="none", busy_timeout=0.2) as mem:
        fill(mem)
        other_writer = sqlite3.connect(db, isolation_level=None)
        merge = mem._store.compact_text_indexes

        def merge_while_another_process_writes(**options) -> int:
            other_writer.execute("BEGIN IMMEDIATE")
            return merge(**options)

        monkeypatch.setattr(mem._store, "compact_text_indexes", merge_while_another_process_writes)
        report = mem.sleep()
        other_writer.execute("ROLLBACK")
        assert report.summaries == 3 and mem.get_stats().by_status["consolidated"] == 18
        assert "merging the text indexes postponed" in caplog.text


def test_undo_restores_exactly_and_refuses_out_of_order(mem: Mnemosyne, tmp_path: Path):
    fill(mem)
    before = rows(tmp_path / "m.db")
    first = mem.sleep()
    mem.remember("Brand new topic: the warehouse move", created_at=OLD + 10 * DAY)
    for i in range(3):
        mem.remember(f"warehouse move step {i} planned with the movers", created_at=OLD + 10 * DAY + i)
    second = mem.sleep()
    assert second.summaries == 1
    with pytest.raises(InvalidInputError, match="undo it first"):
        mem.undo_sleep(first.id)
    mem.undo_sleep(second.id)
    mem.undo_sleep(first.id)
    after = rows(tmp_path / "m.db")
    assert after["links"] == before["links"] == []
    assert {k: v for k, v in after["memories"].items() if k in before["memories"]} == before["memories"]
    with pytest.raises(InvalidInputError, match="already undone"):
        mem.undo_sleep(first.id)
    with pytest.raises(InvalidInputError, match="no sleep run"):
        mem.undo_sleep("nope")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["alpha plan", "beta budget", "gamma", "alpha plan again"]),
                          st.integers(0, 20 * 24), st.sampled_from([0.2, 0.9]), st.sampled_from(["a", "b"])),
                min_size=1, max_size=25))
def test_sleep_then_undo_round_trips_any_database(tmp_path_factory, items):
    db = tmp_path_factory.mktemp("p") / "m.db"
    # Promotion by importance too: undoing it must put scopes back.
    promoting = SleepPolicy(promote_importance=0.9)
    sessions = {s: Mnemosyne(session_id=s, db_path=db, sleep_policy=promoting) for s in ("a", "b")}
    try:
        for n, (text, hours, importance, session) in enumerate(items):
            sessions[session].remember(f"{text} {n % 4}", importance=importance,
                                       created_at=time.time() - hours * 3600)
        before = rows(db)
        report = sessions["a"].sleep()
        with sqlite3.connect(db) as conn:
            statuses = dict(conn.execute("SELECT id, status FROM memories"))
            links = conn.execute("SELECT src_id, dst_id FROM memory_links").fetchall()
        children: dict[str, list[str]] = {}
        for src, dst in links:
            children.setdefault(src, []).append(dst)
        seen, stack = set(), [i for i, s in statuses.items() if s == "active"]
        while stack:
            node = stack.pop()
            if node not in seen:
                seen.add(node)
                stack.extend(children.get(node, ()))
        assert set(before["memories"]) <= seen | {i for i, s in statuses.items() if s == "expired"}
        assert sessions["b"].sleep().changed_rows == 0
        sessions["a"].undo_sleep(report.id)
        assert rows(db) == before
    finally:
        for m in sessions.values():
            m.close()


def test_custom_summariser_is_used_and_a_slow_one_falls_back(mem: Mnemosyne):
    fill(mem, episodes=2)
    calls: list[bool] = []

    def summariser(texts):
        # The write lock is free while we run: another writer can get in.
        calls.append(True)
        with Mnemosyne(session_id="other", db_path=mem.db_path) as other:
            other.remember("written while the summariser runs")
        return f"{len(texts)} notes about the checkout redesign."

    report = mem.sleep(summariser=summariser)
    assert report.summaries == 2 and report.summariser_fallbacks == 0 and len(calls) == 2
    summaries = [m for m in mem.recall("checkout redesign notes", top_k=10) if m.kind == "summary"]
    assert all(m.content.endswith("6 notes about the checkout redesign.") for m in summaries)

    for i, colour in enumerate(["amber", "blue", "coral", "denim", "ebony", "fern"]):  # a new episode
        mem.remember(f"Later note: checked the checkout redesign, palette choice {colour}.",
                     created_at=OLD + 5 * DAY + i * 60)
    report = mem.sleep(summariser=lambda texts: time.sleep(5) or "too late", summariser_timeout=0.2)
    assert report.summariser_fallbacks == report.summaries == 1


def test_sources_a_summarisers_gist_leaves_out_stay_in_view_and_a_second_sleep_changes_nothing(mem: Mnemosyne):
    ids = [mem.remember(text, created_at=OLD + i * 60) for i, text in enumerate([
        "Started the v2 rollout on the staging cluster",
        "Rollout paused after error E5090 in the payments service",
        "Rollout resumed and finished on the staging cluster"])]
    report = mem.sleep(summariser=lambda texts: "The v2 rollout ran on staging.")
    assert report.summaries == 1
    assert mem.get(ids[1]).status == "active"  # the gist never says E5090
    assert mem.recall("error E5090", top_k=1)[0].id == ids[1]
    assert mem.sleep(summariser=lambda texts: "unused").changed_rows == 0


def test_an_event_that_stays_in_view_is_not_repeated_by_its_summary(mem: Mnemosyne):
    decision = "Decision: use Redis for rate limiting via the RateLimiter class"
    texts = ["Opened src/ledger/ratelimit.py to read the docstring", decision,
             "Ran `ruff check src/ledger/ratelimit.py`: no issues", "Ran `pytest tests/test_api.py -q`: 31 passed"]
    ids = [mem.remember(text, importance=0.8 if text == decision else 0.2, created_at=OLD + i * 60)
           for i, text in enumerate(texts)]
    given: list[list[str]] = []
    report = mem.sleep(summariser=lambda texts: given.append(list(texts)) or ". ".join(texts) + ".")
    assert (report.summaries, report.summarised) == (1, 3) and mem.get(ids[1]).status == "active"
    assert given == [[texts[0], texts[2], texts[3]]]  # a summariser is not handed it either
    hits = mem.recall("what did we decide about rate limiting", top_k=3)
    assert [decision in m.content for m in hits].count(True) == 1
    (summary,) = [m for m in mem.recall("ratelimit ruff pytest", top_k=10) if m.kind == "summary"]
    assert summary.importance == 0.2  # as important as what it condenses
    assert summary.content.startswith("Summary of episode (4 events")  # it still covers the episode
    assert mem.sleep().changed_rows == 0


def test_no_summary_is_made_when_every_event_stays_in_view(mem: Mnemosyne):
    ids = [mem.remember(f"Decision {i}: the release train leaves every {day}", importance=0.9,
                        created_at=OLD + i * 60) for i, day in enumerate(["Monday", "Tuesday", "Friday"])]
    report = mem.sleep()
    assert (report.summaries, report.summarised) == (0, 0)
    assert {mem.get(i).status for i in ids} == {"active"}
    assert all(m.kind != "summary" for m in mem.recall("release train decision", top_k=10))
    assert mem.sleep().changed_rows == 0


def test_bad_arguments_change_nothing(mem: Mnemosyne):
    with pytest.raises(InvalidInputError):
        mem.sleep(summariser="not callable")
    with pytest.raises(InvalidInputError):
        mem.sleep(summariser_timeout=0)
    with pytest.raises(ValueError):
        Mnemosyne(db_path=mem.db_path, auto_sleep=-1)
    assert mem.get_stats().last_sleep_at is None


@pytest.mark.parametrize("threshold", [-1.0, -0.01, 1.01, 2])
def test_a_promote_importance_outside_0_to_1_is_refused(threshold):
    # A negative one would share every session's private memories.
    with pytest.raises(InvalidInputError, match="between 0 and 1"):
        SleepPolicy(promote_importance=threshold)


def test_a_held_lease_refuses_a_second_sleeper_and_an_expired_one_is_taken_over(mem: Mnemosyne):
    fill(mem)
    other = SleepStore(mem._store)
    other.acquire_lease("someone-else", ttl=60)
    with pytest.raises(LeaseHeldError, match="another sleeper"):
        mem.sleep()
    other.acquire_lease("someone-else", ttl=-1)  # as if it crashed long ago
    assert mem.sleep().summaries == 3


_SLEEPER = """
import json, sys, time
from mnemosyne import LeaseHeldError, Mnemosyne
mem = Mnemosyne(db_path=sys.argv[1])
sleeper = mem._sleeper
original = sleeper.snapshot
def slow_snapshot():
    time.sleep(1.5)  # hold the lease long enough for the other process to collide
    return original()
sleeper.snapshot = slow_snapshot
open(sys.argv[2], "w").close()
while not all(__import__("os").path.exists(p) for p in sys.argv[3:]):
    time.sleep(0.01)
try:
    print(json.dumps({"ran": mem.sleep().changed_rows}))
except LeaseHeldError as exc:
    print(json.dumps({"lease": str(exc)}))
"""


def test_a_lease_held_by_a_dead_process_of_this_machine_is_taken_at_once(mem: Mnemosyne):
    import socket

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    SleepStore(mem._store).acquire_lease(f"{socket.gethostname()}:{dead.stdout.strip()}:abc", ttl=600)
    fill(mem, episodes=1)
    assert mem.sleep().summaries == 1  # no 10-minute wait for a sleeper that was killed


def test_two_processes_sleeping_at_once_one_runs_one_reports_the_lease(mem: Mnemosyne, tmp_path: Path):
    fill(mem)
    ready = [tmp_path / "ready-1", tmp_path / "ready-2"]
    procs = [
        subprocess.Popen([sys.executable, "-c", _SLEEPER, str(mem.db_path), str(mine), *map(str, ready)],
                         stdout=subprocess.PIPE, text=True)
        for mine in ready
    ]
    results = [json.loads(p.communicate(timeout=120)[0]) for p in procs]
    assert sorted(results, key=lambda r: "lease" in r)[0] == {"ran": 21}
    assert sum("lease" in r and "another sleeper" in r["lease"] for r in results) == 1
    assert mem.get_stats().by_kind["summary"] == 3


def test_auto_sleep_runs_in_the_background_after_an_idle_period(tmp_path: Path):
    with Mnemosyne(session_id="bg", db_path=tmp_path / "m.db", auto_sleep=0.4) as mem:
        started = time.monotonic()
        fill(mem)
        assert time.monotonic() - started < 5  # remember never waited for a sleep
        deadline = time.monotonic() + 20
        while mem._auto_sleeper.runs == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert mem._auto_sleeper.runs == 1 and mem._auto_sleeper.last_error is None
        assert mem.get_stats().last_sleep_at is not None
        assert mem._auto_sleeper._thread is not threading.current_thread()
        assert mem.get_stats().by_kind.get("summary") == 3
        time.sleep(1.0)
        assert mem._auto_sleeper.runs == 1  # no new writes: no new sleep
        mem.remember("one more thing", created_at=OLD)
        deadline = time.monotonic() + 20
        while mem._auto_sleeper.runs < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert mem._auto_sleeper.runs == 2
    assert not mem._auto_sleeper._thread.is_alive()


def test_an_instance_dropped_without_close_ends_its_auto_sleep(tmp_path: Path):
    def serve_a_request() -> threading.Thread:
        mem = Mnemosyne(session_id="request", db_path=tmp_path / "m.db", embedder="none", auto_sleep=True)
        mem.remember("a note written while serving one request")
        return mem._auto_sleeper._thread  # the instance itself goes out of scope, unclosed

    thread = serve_a_request()
    gc.collect()
    thread.join(timeout=30)
    assert not thread.is_alive()


class SlowToPlan(Mnemosyne):
    """Planning that takes a while, as on a large database."""

    planning = threading.Event()

    def _sleep_vectors(self, memory_ids):
        self.planning.set()
        time.sleep(1.0)
        return super()._sleep_vectors(memory_ids)


def test_closing_during_an_auto_sleep_stops_it_and_frees_the_lease(tmp_path: Path):
    db = tmp_path / "m.db"
    mem = SlowToPlan(session_id="bg", db_path=db, auto_sleep=0.2)
    fill(mem)
    assert SlowToPlan.planning.wait(20)
    mem.close()  # while the sleep plans
    assert not mem._auto_sleeper._thread.is_alive()
    assert mem._auto_sleeper.last_error is None and mem._auto_sleeper.runs == 0
    with Mnemosyne(session_id="bg", db_path=db) as other:
        assert other.get_stats().last_sleep_at is None  # the stopped sleep changed nothing
        assert other.sleep().summaries == 3  # and left no lease behind


def test_a_dry_run_says_what_a_run_would_do_and_that_it_changed_no_row(tmp_path: Path):
    with Mnemosyne(session_id="default", db_path=tmp_path / "m.db") as mem:
        fill(mem)
        before = rows(tmp_path / "m.db")
        dry = mem.sleep(dry_run=True)
        assert dry.dry_run and dry.summaries == 3 and dry.summarised == 18
        assert dry.changed_rows == 0 and dry.active_after == dry.active_before == 18
        assert rows(tmp_path / "m.db") == before
        assert mem.sleep().changed_rows > 0  # the rows the plan named change only now


class DryRunsAnotherWhilePlanning(Mnemosyne):
    """A dry run that, while it plans, has a second instance dry-run the same file."""

    inner: SleepReport | None = None

    def _sleep_vectors(self, memory_ids):
        with Mnemosyne(session_id="other", db_path=self.db_path) as other:
            DryRunsAnotherWhilePlanning.inner = other.sleep(dry_run=True)
        return super()._sleep_vectors(memory_ids)


def test_a_dry_run_takes_no_lease_so_two_run_at_once(tmp_path: Path):
    with DryRunsAnotherWhilePlanning(session_id="default", db_path=tmp_path / "m.db") as mem:
        fill(mem)
        before = rows(tmp_path / "m.db")
        outer = mem.sleep(dry_run=True)
        assert outer.summaries == DryRunsAnotherWhilePlanning.inner.summaries == 3
        assert rows(tmp_path / "m.db") == before


def test_a_dry_run_during_a_sleep_reports_the_lease_and_leaves_it_held(mem: Mnemosyne):
    fill(mem)
    other = SleepStore(mem._store)
    other.acquire_lease("someone-else", ttl=60)
    with pytest.raises(LeaseHeldError, match="another sleeper"):
        mem.sleep(dry_run=True)
    with pytest.raises(LeaseHeldError, match="another sleeper"):
        mem.sleep()  # the other sleeper's lease is still its own
    other.release_lease("someone-else")
    assert mem.sleep(dry_run=True).summaries == 3


def test_cli_sleep_undo_and_stats(tmp_path: Path):
    db = tmp_path / "cli.db"
    with Mnemosyne(session_id="default", db_path=db) as mem:
        fill(mem)

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "mnemosyne", *args, "--db", str(db)],
                              capture_output=True, text=True, timeout=60)

    dry = json.loads(cli("sleep", "--dry-run", "--json").stdout)
    assert dry["dry_run"] and dry["summaries"] == 3 and dry["active_after"] == 18 and dry["changed_rows"] == 0
    report = json.loads(cli("sleep", "--json").stdout)
    assert report["active_before"] == 18 and report["active_after"] == 3 and report["summaries"] == 3
    human = cli("stats")
    assert "last_sleep_at" in human.stdout and "consolidated" in human.stdout
    assert "'summary': 3" in human.stdout or '"summary": 3' in human.stdout
    episodes = cli("episodes")
    assert episodes.returncode == 0 and "Summary of episode (6 events" in episodes.stdout
    assert cli("undo-sleep", report["id"]).returncode == 0
    assert json.loads(cli("stats", "--json").stdout)["by_status"] == {"active": 18}
    failed = cli("undo-sleep", "missing")
    assert failed.returncode == 2 and "no sleep run" in failed.stderr


def test_forgetting_a_source_removes_its_text_from_summaries(mem: Mnemosyne):
    texts = ["Rollout of v2 started on the west cluster.", "The admin password is hunter2-kestrel.",
             "Rollout of v2 finished without errors."]
    ids = [mem.remember(text, created_at=OLD + i * 60) for i, text in enumerate(texts)]
    assert mem.sleep().summaries == 1
    summary = next(m for m in mem.recall("rollout password", top_k=10) if m.kind == "summary")
    assert "hunter2-kestrel" in summary.content
    mem.forget(ids[1])
    assert "hunter2-kestrel" not in mem.get(summary.id).content
    assert "Rollout of v2" in mem.get(summary.id).content
    everywhere = mem.recall("hunter2 kestrel", top_k=10, include_consolidated=True)
    assert all("hunter2" not in m.content for m in everywhere)


def test_a_match_on_a_consolidated_original_returns_what_stands_for_it(mem: Mnemosyne):
    texts = ["Rollout of v2 started on the west cluster.", "Thanks!",
             "Rollout of v2 finished without errors on the west cluster."]
    ids = [mem.remember(text, created_at=OLD + i * 60) for i, text in enumerate(texts)]
    mem.sleep()
    hidden = [i for i in ids if mem.get(i).status == "consolidated"]
    assert hidden, "sleep consolidated nothing"
    hits = mem.recall(mem.get(hidden[0]).content, top_k=3)
    assert hits[0].kind == "summary" and hidden[0] not in {h.id for h in hits}
    everything = mem.recall(mem.get(hidden[0]).content, top_k=5, include_consolidated=True)
    assert hidden[0] in {h.id for h in everything}


def test_a_short_fact_the_summary_leaves_out_stays_in_recall(mem: Mnemosyne):
    with mem.episode("standup"):
        fact = mem.remember("Bob resigned.", created_at=OLD)
        thanks = mem.remember("Thanks!", created_at=OLD + 30)
        mem.remember("We reviewed the quarterly roadmap priorities for the platform team.", created_at=OLD + 60)
        mem.remember("The platform roadmap priorities were agreed by the whole team.", created_at=OLD + 120)
    assert mem.sleep().summaries == 1
    assert (mem.get(fact).status, mem.get(thanks).status) == ("active", "consolidated")
    assert mem.recall("did Bob resign?")[0].id == fact


def test_a_fact_in_a_language_without_spaces_the_summary_leaves_out_stays_in_recall(mem: Mnemosyne):
    # To the tokenizer a whole Chinese sentence is one word: not "almost nothing".
    texts = [f"第{i}号会议讨论了项目的预算和进度安排。" for i in range(4)] + ["鲍勃辞职了。", "好的"]
    ids = [mem.remember(text, created_at=OLD + i * 60) for i, text in enumerate(texts)]
    mem.sleep(policy=SleepPolicy(summary_max_sentences=2))
    assert mem.get(ids[4]).status == "active"
    assert mem.get(ids[5]).status == "consolidated"  # "OK": says almost nothing


def test_a_new_value_supersedes_every_memory_stating_the_old_one(mem: Mnemosyne):
    first = mem.remember("The warehouse move owner is Bo.", created_at=OLD)
    again = mem.remember("The warehouse move owner is Bo.", created_at=OLD + 60)
    assert mem.sleep().merged == 1  # one sleep merges the repeat into the first...
    mem.remember("The warehouse move owner is Cy.", created_at=OLD + 120)
    assert mem.sleep().superseded == 1  # ...a later one supersedes it
    assert mem.get(again).status == "consolidated"
    # The copy merged into the superseded memory answers with what superseded it.
    assert [m.content for m in mem.recall("warehouse move owner Bo")] == ["The warehouse move owner is Cy."]

    repeated = [mem.remember("The invoice approver is Dee.", created_at=OLD + 200 + i, allow_duplicate=True)
                for i in range(2)]
    mem.remember("The invoice approver is Eli.", created_at=OLD + 300)
    assert mem.sleep().superseded == 2  # both statements of the old value, in one sleep
    assert {mem.get(i).status for i in repeated} == {"superseded"}
    assert mem.sleep().changed_rows == 0
    assert mem.get(first).status == "superseded"


def test_a_global_fact_another_session_corrected_is_superseded_for_every_session(tmp_path: Path):
    db = tmp_path / "m.db"
    with Mnemosyne(session_id="support-acme", db_path=db) as acme, \
            Mnemosyne(session_id="support-globex", db_path=db) as globex:
        old = acme.remember("The API rate limit is 100 requests per minute.", scope="global", created_at=OLD)
        new = globex.remember("The API rate limit is 300 requests per minute.", scope="global",
                              created_at=OLD + 5 * DAY)
        mine = acme.remember("My email is ana@acme.example.", scope="global", created_at=OLD + 10 * DAY)
        globex.remember("My email is bo@globex.example.", scope="global", created_at=OLD + 15 * DAY)
        assert acme.sleep().superseded == 1
        assert acme.get(old).status == "superseded" and acme.get(mine).status == "active"
        for mem in (acme, globex):
            assert [m.id for m in mem.recall("API rate limit")] == [new]


@pytest.mark.parametrize("importance", [0.5, 0.9])  # consolidated behind the summary, or kept beside it
def test_a_newer_value_supersedes_one_a_summary_quotes_and_the_summary_stops_quoting_it(
    mem: Mnemosyne, tmp_path: Path, importance: float
):
    texts = ["Rollout of v2 started on the west cluster.", "The staging database host is db-staging-2.internal.",
             "Rollout of v2 finished without errors on the west cluster."]
    ids = [mem.remember(text, importance=importance if i == 1 else 0.5, created_at=OLD + i * 60)
           for i, text in enumerate(texts)]
    assert mem.sleep().summaries == 1
    (summary,) = [m for m in mem.recall("rollout", top_k=10) if m.kind == "summary"]
    mem.remember("The staging database host is db-staging-3.internal.", created_at=OLD + 2 * DAY)
    before = rows(tmp_path / "m.db")
    report = mem.sleep()
    assert report.superseded == 1 and mem.get(ids[1]).status == "superseded"
    assert "db-staging-2" not in mem.get(summary.id).content
    assert "Rollout of v2 started on the west cluster." in mem.get(summary.id).content
    assert [mem.get(i).status for i in (ids[0], ids[2])] == ["consolidated", "consolidated"]
    hits = mem.recall("what is the staging database host", top_k=5)
    assert hits[0].content == "The staging database host is db-staging-3.internal."
    assert all("db-staging-2" not in m.content for m in hits)
    assert mem.recall("db-staging-2", top_k=5, include_consolidated=True)[0].id == ids[1]  # kept, linked
    assert mem.sleep().changed_rows == 0
    mem.undo_sleep(report.id)
    assert rows(tmp_path / "m.db") == before
    assert any("db-staging-2" in m.content for m in mem.recall("staging database host", top_k=5))


def test_a_summary_that_quoted_only_the_old_value_is_superseded_with_it(mem: Mnemosyne, tmp_path: Path):
    mem.remember("Cloned the repository", created_at=OLD)
    old = mem.remember("The staging database host is db-staging-2.internal", created_at=OLD + 120)
    mem.remember("Installed the requirements", created_at=OLD + 240)
    assert mem.sleep().summaries == 1
    (summary,) = [m for m in mem.recall("staging database host", top_k=10) if m.kind == "summary"]
    assert mem.get(old).status == "consolidated"
    new = mem.remember("The staging database host is db-staging-3.internal", created_at=OLD + 2 * DAY)
    before = rows(tmp_path / "m.db")
    report = mem.sleep()
    assert report.superseded == 2 and {mem.get(old).status, mem.get(summary.id).status} == {"superseded"}
    assert [m.id for m in mem.recall("what is the staging database host", top_k=3)][0] == new
    assert all("db-staging-2" not in m.content for m in mem.recall("staging database host", top_k=10))
    assert mem.sleep().changed_rows == 0
    mem.undo_sleep(report.id)
    assert rows(tmp_path / "m.db") == before


@pytest.mark.parametrize("change", ["update", "forget"])
def test_a_fact_changed_while_sleep_plans_keeps_its_change_and_supersedes_nothing(
    mem: Mnemosyne, monkeypatch, change: str
):
    import mnemosyne.consolidate as consolidate

    # Recent, so that sleep plans no other change to the newer fact (decay) than the link.
    old = mem.remember("The deploy window is Friday evening.", created_at=time.time() - 7200)
    new = mem.remember("The deploy window is Monday morning.", created_at=time.time() - 60)
    plan = consolidate.plan_consolidation

    def plan_while_another_agent_writes(*args, **kwargs):
        made = plan(*args, **kwargs)
        if made.counts["superseded"]:  # the first plan: the other agent edits the newer fact now
            with Mnemosyne(session_id="agent", db_path=mem.db_path, embedder="none") as other:
                other.update(new, content="Lunch order: two pizzas.") if change == "update" else other.forget(new)
        return made

    monkeypatch.setattr(consolidate, "plan_consolidation", plan_while_another_agent_writes)
    assert mem.sleep().superseded == 0  # nothing states a newer window any more
    assert mem.get(old).status == "active"
    assert mem.recall("deploy window")[0].id == old


def test_an_edit_during_planning_holds_back_only_what_sleep_ties_to_it(mem: Mnemosyne, monkeypatch):
    # Steady edits must not starve sleep: each one holds back its own episode, no more.
    episodes = [mem.remember_many([{"content": f"Deploy {e} step {i}: ran migration batch {e}{i}.",
                                    "created_at": OLD + 10 * DAY + e * DAY + i * 60} for i in range(3)])
                for e in range(3)]
    take = SleepStore.snapshot

    def then_another_process_edits(self: SleepStore):  # every planning round meets an edit
        taken = take(self)
        with Mnemosyne(session_id="agent", db_path=mem.db_path, embedder="none") as other:
            other.update(episodes[1][0], importance=0.6)
        return taken

    monkeypatch.setattr(SleepStore, "snapshot", then_another_process_edits)
    first = mem.sleep()  # before: LeaseHeldError, "memories kept changing", after three rounds
    monkeypatch.undo()
    assert mem.get(episodes[1][0]).importance == 0.6  # the edit stands
    assert {mem.get(i).status for i in episodes[1]} == {"active"}  # its episode waits...
    assert {mem.get(i).status for i in episodes[0] + episodes[2]} == {"consolidated"}
    second = mem.sleep()
    assert (first.summaries, second.summaries) == (2, 1)  # ... for the next sleep
    assert {mem.get(i).status for i in episodes[1]} == {"consolidated"}
    for report in (second, first):  # each undoes exactly what it applied
        mem.undo_sleep(report.id)
    assert {mem.get(i).status for i in sum(episodes, [])} == {"active"}
    assert mem.get_stats().total == 9


def test_an_edit_during_planning_does_not_void_the_decay_of_everything_else(
    mem: Mnemosyne, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    ids = mem.remember_many([{"content": f"note {i} about an unrelated topic {chr(97 + i % 26)}",
                              "created_at": OLD + i * 7200} for i in range(60)])
    take = SleepStore.snapshot

    def then_another_process_edits(self: SleepStore):  # every planning round meets an edit
        taken = take(self)
        with Mnemosyne(session_id="agent", db_path=mem.db_path, embedder="none") as other:
            other.update(ids[7], importance=0.55 + len(edits) / 1000)
        edits.append(ids[7])
        return taken

    edits: list[str] = []
    monkeypatch.setattr(SleepStore, "snapshot", then_another_process_edits)
    report = mem.sleep()  # before: LeaseHeldError, "memories kept changing", after three rounds
    assert len(edits) == 1 and report.changed_rows > 0
    assert mem.get(ids[7]).importance == 0.55  # the edit stands
