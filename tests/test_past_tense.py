"""A query that asks what happened ranks the memories that tell it above those on the
same topic that ask, plan or describe."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from mnemosyne import Mnemosyne
from mnemosyne.core.past_tense import asks_what_happened, in_the_past_tense, tells_what_happened
from mnemosyne.core.ranking import Ranked
from mnemosyne.core.results import told_first

NOW = datetime(2026, 5, 1, tzinfo=timezone.utc)


@pytest.mark.parametrize(("query", "asks"), [
    ("How many movie festivals did I attend?", True),
    ("How many hours have I spent playing games in total?", True),
    ("Where was the conference held?", True),
    ("What's the name of the restaurant I went to in Bandung?", True),
    ("Has the team ever shipped on a Friday?", True),
    ("How many followers do I have on Instagram now?", False),  # "have", but no past participle
    ("What is my current highest score in Ticket to Ride?", False),
    ("Which film festival should I attend?", False),
])
def test_a_query_asks_what_happened_in_the_past_tense_or_the_perfect(query: str, asks: bool):
    assert asks_what_happened(query) is asks


def test_only_the_simple_past_is_a_question_in_the_past_tense():
    # What dates_ahead reads as "a date named is a time memories were made in".
    assert in_the_past_tense("what did we do in January")
    assert not in_the_past_tense("what have I planned for December 10")


@pytest.mark.parametrize(("text", "tells"), [
    ("I recently attended a lecture on street art on March 3rd.", True),
    ("By the way, I volunteered at the Portland Film Festival.", True),
    ("I've finally moved to Lisbon.", True),
    ("Caroline went to the support group yesterday.", True),
    ("Celeste took me 10 hours, and we had been stuck for days.", True),
    ("Can you recommend some film festivals in Texas?", False),
    ("I need a new pair of running shoes.", False),  # "-ed", but the present
    ("I'm interested in learning more about street art.", False),
    ("The font is Inter.", False),
])
def test_a_memory_tells_what_happened_with_someone_and_a_verb_in_the_past(text: str, tells: bool):
    assert tells_what_happened(text) is tells


def test_a_huge_text_is_read_only_so_far_for_its_past_tenses():
    assert tells_what_happened("I attended the launch. " + "word " * 10_000)
    assert not tells_what_happened("word " * 10_000 + "I attended the launch.")


def test_those_that_tell_are_raised_by_the_factor_and_explained():
    ranked = [Ranked(1, 1.0, {"score": 1.0}), Ranked(2, 0.9, {"score": 0.9}), Ranked(3, 0.5, {})]
    moved = told_first(ranked, {2, 3}, 1.2)
    assert [(r.key, round(r.score, 3)) for r in moved] == [(2, 1.08), (1, 1.0), (3, 0.6)]
    assert moved[0].components == {"score": pytest.approx(1.08), "told": pytest.approx(1.2)}
    assert told_first(ranked, set(), 1.2) == ranked


@pytest.mark.parametrize("embedder", ["none", "local"])
def test_a_question_about_what_happened_finds_the_memory_that_tells_it_first(tmp_path: Path, embedder: str):
    if embedder == "local":
        pytest.importorskip("onnxruntime", reason="the 'local' extra (onnxruntime) is not installed")
        pytest.importorskip("tokenizers", reason="the 'local' extra (tokenizers) is not installed")
    with Mnemosyne(session_id="chat", db_path=tmp_path / "m.db", embedder=embedder) as mem:
        told = mem.remember("I attended the Austin Film Festival with my sister.", source="user",
                            created_at=NOW - timedelta(days=30))
        asked = mem.remember("Which film festival in Austin should I attend with a short film?", source="user",
                             created_at=NOW - timedelta(days=1))
        found = mem.recall("which film festival in Austin did I attend with a short film?", now=NOW, explain=True)
        assert [m.id for m in found] == [told, asked]  # the question outranks it by its words alone
        assert [m.explanation["told"] for m in found] == [pytest.approx(1.2), 1.0]
        planned = mem.recall("which film festival in Austin should I attend with a short film?", now=NOW,
                             explain=True)
        assert [m.id for m in planned] == [asked, told]
        assert all(m.explanation["told"] == 1.0 for m in planned)
