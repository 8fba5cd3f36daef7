"""Episodes, timelines and recall context on a real database."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from mnemosyne import DatabaseBusyError, InvalidInputError, Mnemosyne
from mnemosyne.core.consolidation import SleepPolicy

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)


@pytest.fixture
def mem(tmp_path: Path):
    with Mnemosyne(session_id="ops", db_path=tmp_path / "m.db", episode_gap=600) as instance:
        yield instance


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def test_another_session_sees_an_episodes_shared_events_but_not_its_label(mem: Mnemosyne, tmp_path: Path):
    with mem.episode("layoffs planning: close the Berlin office"):
        mem.remember("We will cut 40 jobs in Berlin")
        mem.remember("The office wifi is corp-guest", scope="global")
    with Mnemosyne(session_id="other", db_path=tmp_path / "m.db") as other:
        (seen,) = other.episodes(session_id="ops")
        assert (seen.size, seen.label) == (1, None)
    assert [e.label for e in mem.episodes()] == ["layoffs planning: close the Berlin office"]


def test_timeline_is_in_event_order_and_filtered(mem: Mnemosyne, tmp_path: Path):
    mem.remember("third", created_at=at(30))
    mem.remember("first", created_at=at(0))
    mem.remember("second", created_at=at(10))
    mem.remember("shared later", created_at=at(40), scope="global")
    with Mnemosyne(session_id="other", db_path=tmp_path / "m.db") as other:
        other.remember("other's private note", created_at=at(5))
        assert [m.content for m in other.timeline(session_id="ops")] == ["shared later"]
    assert [m.content for m in mem.timeline()] == ["first", "second", "third", "shared later"]
    assert [m.content for m in mem.timeline(since=at(5), until=at(30))] == ["second", "third"]
    assert [m.content for m in mem.timeline(limit=2)] == ["third", "shared later"]  # the latest two
    assert [m.content for m in mem.timeline(until=at(10), limit=1)] == ["second"]
    with pytest.raises(InvalidInputError, match="swap"):
        mem.timeline(since=at(9), until=at(1))
    with pytest.raises(InvalidInputError):
        mem.timeline(limit=0)


def test_a_limited_timeline_keeps_the_latest_events_in_order(mem: Mnemosyne):
    mem.remember_many([{"content": f"event {i}", "created_at": at(i)} for i in range(150)])
    assert [m.content for m in mem.timeline()] == [f"event {i}" for i in range(50, 150)]
    assert len(mem.timeline(limit=None)) == 150
    until = mem.timeline(until=at(50), limit=10)  # inclusive: the first one shown comes again
    assert [m.content for m in until] == [f"event {i}" for i in range(41, 51)]
    before = mem.timeline(before=at(50), limit=10)  # exclusive: the page before it
    assert [m.content for m in before] == [f"event {i}" for i in range(40, 50)]
    with pytest.raises(InvalidInputError, match="since is after before"):
        mem.timeline(since=at(9), before=at(1))


def page_back(mem: Mnemosyne, limit: int) -> list[list[str]]:
    """Every page from the latest back, each read with ``before`` = the last page's first."""
    pages: list[list[str]] = []
    before = None
    while len(pages) < 20:
        page = mem.timeline(limit=limit, before=before)
        if not page:
            return pages
        pages.append([m.content for m in page])
        before = page[0].created_at
    raise AssertionError(f"paging back does not end: {pages}")


@pytest.mark.parametrize("limit", [1, 2, 3])
def test_paging_back_with_before_meets_every_event_once_and_ends(mem: Mnemosyne, limit: int):
    """A page never splits the events of one instant (to the microsecond, as times are
    returned): three at one time, two less than a microsecond apart, and, in 2106,
    where a float's step is near a microsecond, events a microsecond apart."""
    t = 1_700_000_000.1234567
    far = 4_294_979_641.0  # 2106-02-07
    mem.remember_many(
        [{"content": "early", "created_at": at(0)}]
        + [{"content": f"same time {x}", "created_at": at(10)} for x in "abc"]
        + [{"content": "late", "created_at": at(20)}, {"content": "later", "created_at": at(30)}]
        + [{"content": "below the microsecond", "created_at": t}, {"content": "just after", "created_at": t + 0.2e-6}]
        + [{"content": f"2106 +{n}", "created_at": far + int(n[0]) * 1e-6} for n in ("0", "1a", "1b", "2", "3")]
    )
    pages = page_back(mem, limit)
    seen = [content for page in pages for content in page]
    assert sorted(seen) == sorted(m.content for m in mem.timeline(limit=None))  # each once
    assert [c for page in reversed(pages) for c in page] == [m.content for m in mem.timeline(limit=None)]
    for instant in [{"same time a", "same time b", "same time c"}, {"below the microsecond", "just after"},
                    {"2106 +1a", "2106 +1b"}]:  # on one page, even past the limit
        assert any(instant <= set(page) for page in pages), pages
    assert max(len(page) for page in pages) <= limit + 2  # the limit, and the rest of one instant


def test_paging_back_from_a_since_at_the_first_events_time_ends_empty(mem: Mnemosyne):
    # since below the microsecond it reads back as: the last page back asks for
    # since = before, which is nothing, not a mistake.
    t0 = 1_773_144_020.0000004
    mem.remember_many([{"content": f"e{i}", "created_at": t0 + i} for i in range(4)])
    pages, before = [], None
    while page := mem.timeline(since=t0, limit=2, before=before):
        pages.append([m.content for m in page])
        before = page[0].created_at
    assert pages == [["e2", "e3"], ["e0", "e1"]]


def test_episodes_split_at_gaps_and_by_explicit_blocks(mem: Mnemosyne):
    for minute in (0, 5, 9):
        mem.remember(f"morning standup item at {minute}", created_at=at(minute))
    for minute in (60, 62):
        mem.remember(f"incident triage at {minute}", created_at=at(minute))
    with mem.episode("deploy v2") as episode_id:
        inside = [mem.remember("rollout started"), mem.remember("rollout finished")]
    mem.remember("after the deploy")
    found = mem.episodes()
    assert [(e.label, e.size) for e in found[:2]] == [(None, 3), (None, 2)]
    assert found[0].started_at == at(0) and found[0].ended_at == at(9) and found[0].closed
    deploy = next(e for e in found if e.label == "deploy v2")
    assert deploy.id == episode_id and deploy.closed and list(deploy.event_ids) == inside
    assert deploy.summary is None
    # The event remembered after the block is its own (still open) time-gap episode.
    assert found[-1].size == 1 and not found[-1].closed


def test_explicit_episode_stays_open_until_the_block_ends(mem: Mnemosyne):
    with mem.episode("long job"):
        for i in range(4):
            mem.remember(f"long job step {i} done", created_at=time.time() - 10 * 86_400 + i)
        assert mem.sleep().summaries == 0  # open: never summarised mid-block
        assert not next(e for e in mem.episodes() if e.label == "long job").closed
    report = mem.sleep()
    assert report.summaries == 1
    episode = next(e for e in mem.episodes() if e.label == "long job")
    assert episode.closed and episode.summary is not None
    assert episode.summary.content.startswith("Summary of 'long job' (4 events")


def test_an_episode_whose_row_a_restore_took_away_ends_named(mem: Mnemosyne, tmp_path: Path):
    from mnemosyne.dr.recovery import create_backup, restore_backup

    mem.remember("made before the backup")
    create_backup(mem.db_path, tmp_path / "b.bak")
    with mem.episode("deploy v2") as episode_id:
        mem.remember("deploy step one")
        restore_backup(tmp_path / "b.bak", mem.db_path)  # an operator's, while the block runs
        step_two = mem.remember("deploy step two")
    (episode,) = [e for e in mem.episodes() if step_two in e.event_ids]
    assert (episode.id, episode.label, episode.closed) == (episode_id, "deploy v2", True)


def test_episodes_are_per_thread(mem: Mnemosyne):
    import threading

    seen = {}

    def worker():
        seen["id"] = mem.remember("from another thread")

    with mem.episode("main thread only") as episode_id:
        thread = threading.Thread(target=worker)
        thread.start()
        thread.join()
        mine = mem.remember("from the main thread")
    episode = next(e for e in mem.episodes() if e.id == episode_id)
    assert episode.event_ids == (mine,)


def test_a_task_started_in_an_episode_leaves_it_when_the_block_ends(mem: Mnemosyne):
    import asyncio

    async def scenario() -> tuple[str, str, str]:
        block_ended = asyncio.Event()

        async def reporter() -> tuple[str, str]:
            during = mem.remember("deploy v2 progress noted by the reporter")
            await block_ended.wait()
            return during, mem.remember("nightly metrics report: all green")

        with mem.episode("deploy v2") as episode_id:
            task = asyncio.ensure_future(reporter())
            await asyncio.sleep(0)  # the task writes while the block runs
            mem.remember("rollout finished")
        block_ended.set()
        during, after = await task
        return episode_id, during, after

    episode_id, during, after = asyncio.run(scenario())
    episode = next(e for e in mem.episodes() if e.id == episode_id)
    assert during in episode.event_ids and after not in episode.event_ids
    assert episode.size == 2


def test_a_memorys_own_time_given_back_as_a_bound_includes_it(mem: Mnemosyne):
    # Stored times keep the float's precision; returned ones stop at the microsecond.
    ids = [mem.remember(f"event {i}", created_at=1775035800.0000004 + i / 7) for i in range(5)]
    ids += mem.remember_many([f"batch event {i}" for i in range(5)])
    for memory_id in ids:
        own = mem.get(memory_id).created_at
        assert [m.id for m in mem.timeline(since=own, until=own)] == [memory_id]
        assert memory_id in [m.id for m in mem.recall("event", top_k=20, since=own)]
        assert memory_id in [m.id for m in mem.recall("event", top_k=20, until=own)]


def test_recall_context_attaches_neighbours_without_changing_ranking(mem: Mnemosyne):
    texts = ["we opened the incident", "the database failover started", "failover finished cleanly",
             "we wrote the postmortem", "lunch"]
    for i, text in enumerate(texts):
        mem.remember(text, created_at=at(i))
    plain = mem.recall("failover", top_k=5, now=at(10))
    with_context = mem.recall("failover", top_k=5, now=at(10), context=1)
    assert [m.id for m in plain] == [m.id for m in with_context]
    by_content = {m.content: [c.content for c in m.context] for m in with_context}
    assert by_content["the database failover started"] == [
        "we opened the incident", "failover finished cleanly"]
    assert by_content["failover finished cleanly"] == [
        "the database failover started", "we wrote the postmortem"]
    assert all(m.context == () for m in plain)
    wide = mem.recall("postmortem", context=2)[0]
    assert [c.content for c in wide.context] == [
        "the database failover started", "failover finished cleanly", "lunch"]
    assert wide.to_dict()["context"][0]["content"] == "the database failover started"
    with pytest.raises(InvalidInputError):
        mem.recall("failover", context=-1)


def test_the_timeline_keeps_expired_events_as_history(mem: Mnemosyne):
    for i, text in enumerate(["deploy started", "cache warm-up ran", "deploy finished"]):
        mem.remember(text, created_at=at(i), valid_until=at(1.5) if i == 1 else None)
    history = ["deploy started", "cache warm-up ran", "deploy finished"]
    assert [e.content for e in mem.timeline()] == history
    assert mem.sleep().expired == 1  # the warm-up note is no longer true...
    assert [e.content for e in mem.timeline()] == history  # ...but it still happened
    assert "cache warm-up ran" not in [m.content for m in mem.recall("warm-up")]
    hit = mem.recall("deploy finished", top_k=1, context=1)[0]
    assert [c.content for c in hit.context] == ["cache warm-up ran"]  # as the timeline shows it


def test_neighbours_and_episodes_follow_the_timeline_below_the_microsecond(mem: Mnemosyne):
    """Times are returned to the microsecond but stored as given: events at one
    instant, or less than a microsecond apart, keep the timeline's order."""
    t = 1_700_000_000.1234567
    mem.remember_many([{"content": f"{word} happened", "created_at": t} for word in ("xray", "yankee", "zulu")])
    mem.remember_many([{"content": "victor happened", "created_at": t + 0.4e-6},
                       {"content": "whiskey happened", "created_at": t + 0.2e-6}])
    timeline = [e.content for e in mem.timeline()]
    assert timeline[:3] == ["xray happened", "yankee happened", "zulu happened"]
    for i, text in enumerate(timeline):
        hit = mem.recall(text, top_k=1, context=1)[0]
        assert hit.content == text
        assert [c.content for c in hit.context] == timeline[max(0, i - 1):i] + timeline[i + 1:i + 2]
    (episode,) = mem.episodes()
    assert [mem.get(i).content for i in episode.event_ids] == timeline

CRASH_INSIDE_AN_EPISODE = """
import os, sys, time
from mnemosyne import Mnemosyne
mem = Mnemosyne(session_id="ops", db_path=sys.argv[1], embedder="none")
start = time.time() - 10 * 86400
with mem.episode("deploy v2"):
    for i, text in enumerate(["Started the v2 rollout on the canary hosts.",
                              "Canary error rate stayed flat for an hour.",
                              "Rolled v2 out to every region without incident."]):
        mem.remember(text, created_at=start + i * 60)
    os._exit(1)  # killed inside the block: the episode is never ended
"""


@pytest.mark.parametrize(("abandoned_after", "summaries"), [(0.0, 1), (86_400.0, 0)])
def test_an_episode_left_open_by_a_dead_process_is_summarised_once_abandoned(
    tmp_path: Path, abandoned_after: float, summaries: int
):
    db = tmp_path / "m.db"
    crashed = subprocess.run([sys.executable, "-c", CRASH_INSIDE_AN_EPISODE, str(db)], timeout=60)
    assert crashed.returncode == 1
    with Mnemosyne(session_id="ops", db_path=db, embedder="none") as mem:
        assert [(e.label, e.size, e.closed) for e in mem.episodes()] == [("deploy v2", 3, False)]
        # Its events are dated 10 days ago, but it was written to just now: only a
        # policy that gives up on open episodes at once summarises it yet.
        assert mem.sleep(policy=SleepPolicy(abandoned_after=abandoned_after)).summaries == summaries
        # Once sleep has given up on the block and summarised it, it is over.
        assert [e.closed for e in mem.episodes()] == [summaries == 1]


def test_every_summary_is_reached_from_episodes_when_a_global_event_falls_between(tmp_path: Path):
    # Sleep splits a session's own events; a global event 25 minutes after the first
    # three and 25 before the last three bridges the 30-minute gap for episodes().
    with Mnemosyne(session_id="ops", db_path=tmp_path / "m.db", embedder="none") as mem:
        start = time.time() - 3 * 86_400
        for i in range(3):
            mem.remember(f"morning standup item {i}: reviewed the ticket queue", created_at=start + i * 60)
        mem.remember("Team-wide: the staging cluster is now eu-west-2", scope="global", created_at=start + 25 * 60)
        for i in range(3):
            mem.remember(f"afternoon task {i}: tuned the autoscaler", created_at=start + 50 * 60 + i * 60)
        assert mem.sleep().summaries == 2
        found = mem.episodes()
        assert [(e.size, e.summary is not None, e.closed) for e in found] == [
            (3, True, True), (1, False, True), (3, True, True)]
        assert "standup" in found[0].summary.content and "autoscaler" in found[2].summary.content
        assert found[0].id == "auto:" + found[0].event_ids[0]


def test_the_blocks_own_error_reaches_the_caller_when_the_episode_cannot_be_ended(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    db = tmp_path / "m.db"
    with Mnemosyne(session_id="ops", db_path=db, embedder="none", busy_timeout=0.2) as mem:
        mem.remember("warm up")
        holder = sqlite3.connect(db, isolation_level=None)
        with pytest.raises(ValueError, match="the agent's own error"):
            with mem.episode("risky"):
                mem.remember("step 1")
                holder.execute("BEGIN IMMEDIATE")  # another writer holds the lock past the timeout
                raise ValueError("the agent's own error")
        assert "episode 'risky' was not marked ended" in caplog.text
        holder.execute("ROLLBACK")
        # The block succeeded: the error says so, so the caller does not run it again.
        with pytest.raises(DatabaseBusyError, match="episode 'fine' .all remembered inside it is stored"):
            with mem.episode("fine"):
                mem.remember("step 2")
                holder.execute("BEGIN IMMEDIATE")
        holder.execute("ROLLBACK")
        holder.close()
        assert [(e.label, e.closed) for e in mem.episodes() if e.label] == [("risky", False), ("fine", False)]


def test_a_repeat_sleep_merged_stays_in_its_summarised_episode(tmp_path: Path):
    with Mnemosyne(session_id="ops", db_path=tmp_path / "m.db", embedder="none", dedupe_window=0) as mem:
        start = time.time() - 3 * 86_400
        for i, text in enumerate(["Started the deploy of build 42", "started the deploy of build 42",
                                  "Smoke tests passed on staging for build 42", "Promoted build 42 to production"]):
            mem.remember(text, created_at=start + i * 60)
        report = mem.sleep()
        assert (report.merged, report.summaries) == (1, 1)
        assert [(e.size, e.summary is not None) for e in mem.episodes()] == [(4, True)]


def test_an_event_sleep_does_not_summarise_stays_in_the_summarised_episode_around_it(tmp_path: Path):
    # A global decision and a note that expires, written mid-episode, are left out of
    # its summary: still in its episode, as before that sleep, not one of their own.
    with Mnemosyne(session_id="ledger-api", db_path=tmp_path / "m.db", embedder="none") as mem:
        start = time.time() - 3 * 86_400
        mem.remember("Started feature: multi-currency support", created_at=start)
        mem.remember("Decision: store amounts as integer minor units", scope="global", importance=0.9,
                     created_at=start + 120)
        mem.remember("Added the currency_code column", created_at=start + 240)
        mem.remember("The dev database is read-only until the backup ends", valid_until=time.time() + 86_400,
                     created_at=start + 300)
        mem.remember("Ran the migration on the dev database", created_at=start + 360)
        before = [(e.started_at, e.ended_at, e.event_ids) for e in mem.episodes()]
        assert [len(ids) for _, _, ids in before] == [5]

        assert mem.sleep().summaries == 1

        found = mem.episodes()
        assert [(e.started_at, e.ended_at, e.event_ids) for e in found] == before
        assert found[0].summary is not None and "3 events" in found[0].summary.content


def test_episodes_find_every_summary_of_a_session_longer_than_one_lookup(tmp_path: Path):
    # Summaries are looked up 500 events at a time: episodes either side of a boundary
    # each keep their own, and another session's stay its own.
    words = [f"{a}{b}" for a in ("ka", "lo", "mi", "ren", "tas", "vel") for b in ("dor", "pin", "sul", "ne", "ri")]
    start = time.time() - 5 * 86_400
    with Mnemosyne(session_id="ops", db_path=tmp_path / "m.db", embedder="none") as mem:
        for episode in range(4):
            mem.remember_many([{
                "content": f"ops {episode} step {i}: " + " ".join(words[(i * 7 + k * 11) % 30] for k in range(6)),
                "created_at": start + episode * 7200 + i * 5,
            } for i in range(300)])
        with Mnemosyne(session_id="other", db_path=tmp_path / "m.db", embedder="none") as other:
            other.remember_many([{"content": f"other step {i}: lowered the cache ttl", "created_at": start + i * 5}
                                 for i in range(5)])
            assert other.sleep().summaries == 5  # sleep summarises every session's episodes
            assert [(e.size, "other step" in e.summary.content) for e in other.episodes() if e.summary] == [(5, True)]
        found = mem.episodes()
        assert [e.size for e in found] == [300] * 4
        assert [e.summary is not None and f"ops {n} step" in e.summary.content for n, e in enumerate(found)] == [
            True] * 4
