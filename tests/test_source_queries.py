"""A query that names a source and asks nothing else lists what that source said."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from mnemosyne import Mnemosyne, retrieval
from mnemosyne.core import lexical
from mnemosyne.core.consolidation import SleepPolicy
from mnemosyne.testing import HashEmbedder

NOW = datetime(2026, 6, 10, 12, tzinfo=timezone.utc)
EMBEDDERS = pytest.mark.parametrize("embedder", ["none", HashEmbedder()], ids=["words only", "with vectors"])


def ago(hours: float) -> datetime:
    return NOW - timedelta(hours=hours)


@pytest.mark.parametrize(("query", "named"), [
    ("what did ci-bot say", ["ci-bot"]),
    ("what did CI Bot post", ["ci-bot"]),  # its words, however spelled
    ("what did the bot say", ["bot"]),
    ("what did Caroline and Melanie talk about", ["Caroline", "Melanie"]),
    ("what did I say", []),  # a source named by stopwords alone is never named
    ("our last conversation", []),  # nor one named by words that shape a question
    ("what did ci say", []),
])
def test_a_query_names_the_sources_whose_words_it_holds(query: str, named: list[str]):
    index = lexical.index_sources(["ci-bot", "bot", "Caroline", "Melanie", "I", "conversation", "--"])
    assert lexical.outermost(lexical.named_sources(query, index)) == named


@pytest.mark.parametrize(("query", "besides"), [
    ("what did ci-bot say", []),
    ("messages from ci-bot", []),
    ("anything ci-bot reported", []),
    ("what did ci-bot say yesterday", ["yesterday"]),  # a time: the caller decides
    ("what did ci-bot say about arm64", ["arm64"]),
    ("where was ci-bot", None),
    ("when did ci-bot report", None),
])
def test_a_query_naming_a_source_may_ask_nothing_else(query: str, besides: list[str] | None):
    assert lexical.asked_besides(query, ["ci-bot"]) == besides


@EMBEDDERS
@pytest.mark.parametrize("query", ["what did ci-bot say", "ci-bot", "messages from ci-bot", "CI-Bot's notes"])
def test_a_query_naming_only_a_source_lists_what_it_said(tmp_path: Path, embedder, query: str):
    with Mnemosyne(session_id="a", db_path=tmp_path / "m.db", embedder=embedder) as mem:
        failed = mem.remember("Build 412 failed on the arm64 runner", source="ci-bot", created_at=ago(30))
        deployed = mem.remember("Deploy finished for staging", source="ci-bot", created_at=ago(20))
        mem.remember("The user prefers dark mode", source="user", created_at=ago(10))
        mem.remember("Ask ci-bot to rerun the flaky tests", source="user", created_at=ago(5))
        assert [m.id for m in mem.recall(query, now=NOW)] == [deployed, failed]


def test_a_source_listing_is_ordered_by_importance_then_newest_whatever_was_recalled_before(tmp_path: Path):
    with Mnemosyne(db_path=tmp_path / "m.db", embedder="none") as mem:
        old, newer, newest = (mem.remember(f"nightly run {n} passed", source="ci-bot", created_at=ago(30 - n))
                              for n in range(3))
        alert = mem.remember("disk almost full on the runner", source="ci-bot", importance=0.9, created_at=ago(40))
        assert [m.id for m in mem.recall("what did ci-bot say", now=NOW)] == [alert, newest, newer, old]
        mem.recall("what did ci-bot say", now=NOW, top_k=1)
    with Mnemosyne(db_path=tmp_path / "m.db", embedder="none") as mem:  # the recall counts are written
        later = mem.remember("nightly run 3 passed", source="ci-bot", created_at=ago(1))
        assert [m.id for m in mem.recall("what did ci-bot say", now=NOW, top_k=2)] == [alert, later]


def test_explain_shows_that_a_listing_found_them_by_their_source(tmp_path: Path):
    with Mnemosyne(db_path=tmp_path / "m.db", embedder=HashEmbedder()) as mem:
        mem.remember("Build 412 failed on the arm64 runner", source="ci-bot")
        (found,) = mem.recall("what did ci-bot say", explain=True)
        assert found.explanation is not None
        assert found.explanation["named_source"] == 1.0
        assert found.explanation["dense"] == found.explanation["listed"] == found.explanation["content"] == 0.0
        topical = mem.recall("what did ci-bot say about arm64", explain=True)[0].explanation
        assert topical is not None and topical["named_source"] == 0.0 and topical["content"] > 0


def test_a_source_listing_shows_only_what_the_viewer_may_see(tmp_path: Path):
    db = tmp_path / "m.db"
    with Mnemosyne(session_id="builds", db_path=db, embedder="none") as builds:
        builds.remember("Runner 7 credentials rotated", source="ci-bot", created_at=ago(3))
        shared = builds.remember("Release 2.4 is green", source="ci-bot", scope="global", created_at=ago(2))
    with Mnemosyne(session_id="me", db_path=db, embedder="none") as me:
        mine = me.remember("Build 412 failed on the arm64 runner", source="ci-bot", created_at=ago(1))
        assert [m.id for m in me.recall("what did ci-bot say", now=NOW)] == [mine, shared]
        assert [m.id for m in me.recall("what did ci-bot say", now=NOW, scope="global")] == [shared]
        assert [m.id for m in me.recall("what did ci-bot say", now=NOW, scope="session")] == [mine]


def test_a_source_only_another_session_heard_from_is_no_source(tmp_path: Path):
    db = tmp_path / "m.db"
    with Mnemosyne(session_id="builds", db_path=db, embedder="none") as builds:
        builds.remember("Runner 7 credentials rotated", source="ci-bot")
    with Mnemosyne(session_id="me", db_path=db, embedder="none") as me:
        mentioned = me.remember("ci-bot said the deploy is blocked", source="user")
        # Searched for as words, as if no session had that source: its private
        # memories do not show, nor does it show that they exist.
        assert [m.id for m in me.recall("what did ci-bot say")] == [mentioned]
        me.remember("Release 2.4 is green", source="ci-bot")
        assert [m.content for m in me.recall("what did ci-bot say")] == ["Release 2.4 is green"]


def test_a_source_listing_keeps_the_callers_filters(tmp_path: Path):
    with Mnemosyne(db_path=tmp_path / "m.db", embedder="none") as mem:
        old = mem.remember("Build 400 failed", source="ci-bot", created_at=ago(72))
        new = mem.remember("Build 412 failed", source="ci-bot", created_at=ago(2))
        mem.remember("the runner needs more disk", source="user", created_at=ago(1))
        assert [m.id for m in mem.recall("what did ci-bot say", now=NOW, since=ago(24))] == [new]
        assert [m.id for m in mem.recall("what did ci-bot say", now=NOW, until=ago(24))] == [old]
        assert [m.id for m in mem.recall("what did ci-bot say", now=NOW, source=["ci-bot", "user"])] == [new, old]
        # A source the caller's filters leave out is only words again.
        assert mem.recall("what did ci-bot say", now=NOW, source="user") == []
        mem.update(new, metadata={"note": "edited"})
        expired = mem.remember("Runner 9 is offline", source="ci-bot", created_at=ago(3), valid_until=ago(1))
        assert expired not in {m.id for m in mem.recall("what did ci-bot say", now=NOW)}
        assert expired in {m.id for m in mem.recall("what did ci-bot say", now=NOW, include_consolidated=True)}


@EMBEDDERS
def test_a_source_and_a_time_list_what_it_said_then(tmp_path: Path, embedder):
    with Mnemosyne(db_path=tmp_path / "m.db", embedder=embedder) as mem:
        mem.remember("Build 400 failed", source="ci-bot", created_at=ago(60))
        yesterday = mem.remember("Build 412 failed", source="ci-bot", created_at=ago(20))
        mem.remember("Build 413 passed", source="ci-bot", created_at=ago(2))
        mem.remember("The runner was slow", source="user", created_at=ago(21))
        assert [m.id for m in mem.recall("what did ci-bot say yesterday", now=NOW)] == [yesterday]
        assert mem.recall("what did ci-bot say last Friday", now=NOW) == []


def test_a_source_and_a_topic_search_the_topic(tmp_path: Path):
    with Mnemosyne(db_path=tmp_path / "m.db", embedder="none") as mem:
        failed = mem.remember("Build 412 failed on the arm64 runner", source="ci-bot", created_at=ago(30))
        deployed = mem.remember("Deploy finished for staging", source="ci-bot", created_at=ago(20))
        flaky = mem.remember("arm64 runners are flaky", source="user", created_at=ago(10))
        assert [m.id for m in mem.recall("what did ci-bot say", now=NOW)] == [deployed, failed]
        # The topic is searched for; the source only puts its own memories first.
        assert [m.id for m in mem.recall("what did ci-bot say about arm64", now=NOW)] == [failed, flaky]


# The bundled model: the test embedder's vectors are of words alone, and "logs" is as
# near to "decision-log" to it as any word of the topic.
@pytest.mark.parametrize("embedder", ["none", "local"], ids=["words only", "with the local model"])
def test_a_source_named_beside_a_topic_puts_its_own_memories_of_it_first(tmp_path: Path, embedder: str):
    if embedder == "local":
        pytest.importorskip("onnxruntime", reason="the 'local' extra (onnxruntime) is not installed")
    with Mnemosyne(db_path=tmp_path / "m.db", embedder=embedder) as mem:
        decided = mem.remember("Decided: the refund API requires an idempotency key", source="decision-log",
                               created_at=ago(400))
        # Many memories of another source that share the topic and the source's words
        # ("logs") fill every candidate list of the whole memory.
        mem.remember_many([
            {"content": f"Checked the staging logs: no errors on the refund endpoint (check {i})",
             "source": "terminal", "created_at": ago(300 - i)}
            for i in range(150)
        ])
        for query in ("what did the decision-log say about refunds", "what did the decision log say about refunds"):
            assert mem.recall(query, now=NOW)[0].id == decided, query


@EMBEDDERS
def test_a_source_named_beside_words_no_memory_holds_is_searched_by_its_own_words(tmp_path: Path, embedder):
    with Mnemosyne(db_path=tmp_path / "m.db", embedder=embedder) as mem:
        alex = mem.remember("The user's name is Alex and they work in the Berlin office (CET).", source="user",
                            created_at=ago(200))
        mem.remember("Deploys go out on Fridays.", source="assistant", created_at=ago(100))
        assert [m.id for m in mem.recall("which timezone is the user in", now=NOW)][:1] == [alex]


@EMBEDDERS
def test_the_user_is_listed_only_when_nothing_else_is_asked(tmp_path: Path, embedder):
    with Mnemosyne(db_path=tmp_path / "m.db", embedder=embedder) as mem:
        pizza = mem.remember("I like pizza with olives", source="user", created_at=ago(30))
        budget = mem.remember("The budget for the trip is 2000 euros", source="user", created_at=ago(2))
        mem.remember("The budget review is on Friday", source="assistant", created_at=ago(1))
        assert [m.id for m in mem.recall("what did the user say", now=NOW)] == [budget, pizza]
        for topical in ("what did the user say about the budget", "what did I say about the budget"):
            found = [m.content for m in mem.recall(topical, now=NOW)]
            assert found[:2] == ["The budget for the trip is 2000 euros", "The budget review is on Friday"]
            assert "I like pizza with olives" not in found


def test_a_question_about_what_a_source_said_is_no_listing(tmp_path: Path):
    with Mnemosyne(db_path=tmp_path / "m.db", embedder="none") as mem:
        mem.remember("Caroline: I went to the pottery class", source="Caroline", created_at=ago(5))
        mem.remember("Melanie: Where was the class?", source="Melanie", created_at=ago(4))
        mem.remember("Caroline: At the community centre downtown", source="Caroline", created_at=ago(3))
        assert len(mem.recall("Caroline", now=NOW)) == 2
        # "Where", "when", "why", "how" and "who" ask about something she said.
        found = mem.recall("where was Caroline", now=NOW, explain=True)
        assert found and all(m.explanation is not None and m.explanation["named_source"] == 0 for m in found)


def test_a_source_named_by_a_common_word_does_not_take_over_a_topical_query(tmp_path: Path):
    with Mnemosyne(db_path=tmp_path / "m.db", embedder="none") as mem:
        standup = mem.remember("Standup moved to 10:00", source="notes", created_at=ago(30))
        mem.remember("Dentist on Tuesday", source="notes", created_at=ago(40))
        budget = mem.remember("The budget is 2000 euros", source="user", created_at=ago(2))
        assert [m.id for m in mem.recall("notes", now=NOW, top_k=1)] == [standup]
        assert [m.id for m in mem.recall("notes about the budget", now=NOW)] == [budget]


@pytest.mark.parametrize("query", ["what is my email?", "what's my email", "my email"])
def test_a_question_about_a_thing_a_source_is_named_after_is_topical(tmp_path: Path, query: str):
    with Mnemosyne(db_path=tmp_path / "m.db", embedder="none") as mem:
        mem.remember("Newsletter: 20% off shoes this week", source="email", created_at=ago(3))
        address = mem.remember("My email is ana@example.com", source="user", created_at=ago(30))
        assert mem.recall(query, now=NOW)[0].id == address
        assert {m.source for m in mem.recall("what did the email say", now=NOW)} == {"email"}


def test_a_source_named_by_a_word_of_speech_beside_another_is_that_word(tmp_path: Path):
    with Mnemosyne(db_path=tmp_path / "m.db", embedder="none") as mem:
        mem.remember("Grocery list: eggs, milk", source="notes", created_at=ago(3))
        nightly = mem.remember("Nightly run passed", source="ci-bot", created_at=ago(2))
        for query in ("notes from ci-bot", "what notes did ci-bot post", "ci-bot's notes"):
            assert [m.id for m in mem.recall(query, now=NOW)] == [nightly], query


def test_a_source_the_scope_keeps_none_of_is_no_listing(tmp_path: Path):
    db = tmp_path / "m.db"
    with Mnemosyne(session_id="me", db_path=db, embedder="none") as mem:
        mem.remember("Build 412 failed on arm64", source="ci-bot", scope="global", created_at=ago(3))
        flagged = mem.remember("ci-bot flagged the arm64 build as broken", source="user", created_at=ago(2))
        assert [m.id for m in mem.recall("what did ci-bot say", now=NOW, scope="session")] == [flagged]


def test_a_longer_name_is_the_source_named(tmp_path: Path):
    with Mnemosyne(db_path=tmp_path / "m.db", embedder="none") as mem:
        mem.remember("Disk usage at 80%", source="bot", created_at=ago(2))
        build = mem.remember("Build 412 failed", source="ci-bot", created_at=ago(1))
        assert [m.id for m in mem.recall("what did ci-bot say", now=NOW)] == [build]
        assert len(mem.recall("what did the bots say", now=NOW)) == 0


def test_what_a_source_said_stays_listed_after_sleep_condensed_it(tmp_path: Path):
    with Mnemosyne(db_path=tmp_path / "m.db", embedder="none") as mem:
        said = [mem.remember(f"Step {i} of the migration is done.", source="ci-bot", created_at=ago(50 - i / 60))
                for i in range(4)]
        mem.remember("Looks good to me.", source="user", created_at=ago(49.9))
        report = mem.sleep(policy=SleepPolicy(summarise_after=0, consolidate="all"))
        assert report.summarised >= 4
        # The summary is by "sleep": what ci-bot said is listed as it said it.
        assert [m.id for m in mem.recall("what did ci-bot say", now=NOW)] == said[::-1]


def test_a_source_is_named_as_soon_as_any_process_stores_its_first_memory(tmp_path: Path):
    db = tmp_path / "m.db"
    with Mnemosyne(db_path=db, embedder="none") as mem, Mnemosyne(db_path=db, embedder="none") as other:
        mentioned = mem.remember("ci-bot said the deploy is blocked", source="user", created_at=ago(30))
        assert [m.id for m in mem.recall("what did ci-bot say", now=NOW)] == [mentioned]
        said = other.remember("Deploy unblocked", source="ci-bot", created_at=ago(1))
        assert [m.id for m in mem.recall("what did ci-bot say", now=NOW)] == [said]
        other.forget(said)
        assert [m.id for m in mem.recall("what did ci-bot say", now=NOW)] == [mentioned]


def test_past_so_many_sources_none_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    with Mnemosyne(db_path=tmp_path / "m.db", embedder="none") as mem:
        mentioned = mem.remember("ci-bot said the deploy is blocked", source="user", created_at=ago(30))
        said = mem.remember("Deploy unblocked", source="ci-bot", created_at=ago(1))
        assert [m.id for m in mem.recall("what did ci-bot say", now=NOW)] == [said]
        monkeypatch.setattr(retrieval, "NAMED_SOURCES_UP_TO", 1)
        assert [m.id for m in mem.recall("what did ci-bot say", now=NOW)] == [mentioned]
