"""Questions about the latest of what is remembered: "where did we leave off", "what
did we do recently", "what's the latest on the migration", "what's the next step"."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from mnemosyne import Mnemosyne
from mnemosyne.core.temporal import asks_latest, asks_recent, named_time, without_times
from mnemosyne.testing import HashEmbedder

NOW = datetime(2026, 11, 27, 17, tzinfo=timezone.utc)  # a Friday
EMBEDDERS = pytest.mark.parametrize("embedder", ["none", HashEmbedder()], ids=["words only", "with vectors"])


@pytest.mark.parametrize("query", [
    "where did we leave off", "pick up where we left off", "what were we doing", "what was I working on",
    "what did we do recently", "anything new lately", "what have we done so far", "what did we do last time",
    "what's next?", "what should I do next",
])
def test_a_question_about_nothing_but_the_latest_names_the_day_up_to_the_latest_memory(query: str):
    last_active = NOW - timedelta(days=14, hours=3)  # back after two weeks
    found = named_time(query, NOW, last_active)
    assert found is not None
    # The day up to the latest memory; the week before it, on to today's end, for a topical question.
    assert found.named == (last_active - timedelta(days=1), last_active + timedelta(microseconds=1))
    assert found.span == (last_active - timedelta(days=7), datetime(2026, 11, 28, tzinfo=timezone.utc))
    assert without_times(query).strip(" ?") in ("", "what's", "what should i do", "what have we done",
                                                "what did we do", "anything new", "pick up")


@pytest.mark.parametrize(("query", "latest"), [
    ("what's the latest on the migration", True),
    ("the most recent deploy", True),
    ("what's the next step", True),
    ("where did we leave off with the invoices", True),
    ("what did Melanie paint recently", False),  # loosely when: no time to favour
    ("what did the dentist say last time", False),
    ("the order of the museums from earliest to latest", False),  # an order, not a time
    ("what should we do next week", False),  # a time ahead
    ("when is my next dentist appointment", False),
])
def test_only_the_latest_state_of_a_topic_names_the_recent_time(query: str, latest: bool):
    assert asks_recent(query) == asks_latest(query, NOW) == latest
    assert (named_time(query, NOW) is not None) == latest


def test_another_time_named_is_the_time_of_a_question_about_the_latest():
    # "The latest from last week": last week's memories, favoured as any time's.
    assert named_time("the latest from last week", NOW) == named_time("what happened last week", NOW)
    assert not asks_latest("the latest from last week", NOW)


@EMBEDDERS
@pytest.mark.parametrize("query", ["where did we leave off", "what were we doing", "what did we do recently"])
def test_back_after_two_weeks_the_last_working_day_is_where_we_left_off(tmp_path: Path, embedder, query: str):
    last_day = NOW - timedelta(days=14)
    with Mnemosyne(session_id="agent", db_path=tmp_path / "m.db", embedder=embedder) as mem:
        mem.remember_many({"content": f"Reviewed pull request {n} of the billing service.",
                           "created_at": NOW - timedelta(days=30 - n)} for n in range(10))
        last = mem.remember_many([
            {"content": "Wrote the migration for the refunds table.", "created_at": last_day.replace(hour=10)},
            {"content": "Left the refunds migration half done: the down step is missing.",
             "created_at": last_day.replace(hour=16)},
        ])
        # Another agent's shared note of yesterday is not where this one left off.
        with Mnemosyne(session_id="peer", db_path=tmp_path / "m.db", embedder=embedder) as peer:
            peer.remember("The office is closed on Monday.", scope="global", created_at=NOW - timedelta(days=1))
        found = mem.recall(query, now=NOW, explain=True)
        assert [m.id for m in found] == last[::-1]
        assert all(m.explanation["listed"] == 1.0 for m in found)


@EMBEDDERS
@pytest.mark.parametrize("query", ["what's the next step", "what is the latest next step"])
def test_asking_for_the_latest_puts_todays_match_above_older_closer_ones(tmp_path: Path, embedder, query: str):
    with Mnemosyne(db_path=tmp_path / "m.db", embedder=embedder) as mem:
        for days, step in [(40, "build the login page"), (30, "add the footer links"), (20, "wire up the search box")]:
            mem.remember(f"Next step: {step}.", created_at=NOW - timedelta(days=days))
        today = mem.remember("Next step: implement the responsive checkout form with address autocomplete.",
                             created_at=NOW - timedelta(hours=2))
        found = mem.recall(query, now=NOW, top_k=3)
        assert found[0].id == today
        assert len(found) == 3  # the older steps still match


def test_the_latest_on_a_topic_is_its_latest_match_with_the_local_model(tmp_path: Path):
    with Mnemosyne(db_path=tmp_path / "m.db", embedder="local") as mem:
        mem.remember("Migration plan: move the orders table to Postgres in three steps.",
                     created_at=NOW - timedelta(days=35))
        mem.remember("Migration: the orders table copy finished.", created_at=NOW - timedelta(days=20))
        latest = mem.remember("Migration status: cut over the orders service to the new database this morning; "
                              "rollback window open until Monday.", created_at=NOW - timedelta(hours=6))
        mem.remember("Lunch order: pizza for the team.", created_at=NOW - timedelta(hours=3))
        for query in ("what's the latest on the migration", "where did we leave off with the migration"):
            assert mem.recall(query, now=NOW, top_k=3)[0].id == latest
