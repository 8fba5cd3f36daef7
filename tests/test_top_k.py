"""``top_k`` only cuts the ranking: up to 50 results, a smaller top_k returns the first
results of a larger one, and every candidate is scored for every query word it holds,
however many results were asked for."""

from __future__ import annotations

import random
from datetime import datetime, timezone
from pathlib import Path

import pytest

from mnemosyne import Mnemosyne
from mnemosyne.testing import HashEmbedder

NOW = datetime(2026, 6, 1, tzinfo=timezone.utc)
SERVICES = ("billing", "search", "gateway", "auth", "checkout")
LIBRARIES = ("celery", "kafka", "redis", "numpy", "react")
ALLERGY = "Priya is allergic to peanuts, so the team lunch order must avoid them."


def team_log(count: int) -> list[dict]:
    """A team's work log: four kinds of entry, "team" in about half of them."""
    rng = random.Random(0)
    entries = (
        lambda: f"Design review: the team chose {rng.choice(LIBRARIES)} for the {rng.choice(SERVICES)} queue.",
        lambda: f"Standup: the {rng.choice(SERVICES)} team is blocked waiting for credentials from the platform team.",
        lambda: f"Deployed {rng.choice(SERVICES)} v{rng.randint(1, 4)}.{rng.randint(0, 9)} to staging.",
        lambda: f"Benchmark of {rng.choice(SERVICES)}: {rng.randint(200, 5000)} requests per second.",
    )
    return [{"content": rng.choice(entries)(), "importance": round(rng.uniform(0.2, 0.8), 2)} for _ in range(count)]


@pytest.mark.parametrize("embedder", [HashEmbedder(), "none"], ids=["hash", "lexical"])
def test_a_smaller_top_k_returns_the_first_results_of_a_larger_one(tmp_path: Path, embedder: object):
    with Mnemosyne(session_id="a", db_path=tmp_path / "m.db", embedder=embedder, dedupe_window=0) as mem:
        mem.remember_many(team_log(400))
        for query in ("team blocked on credentials", "which queue library did the team choose",
                      "staging deploys", "requests per second for search", "food allergies on the team"):
            fifty = [m.id for m in mem.recall(query, top_k=50, now=NOW)]
            for top_k in (1, 3, 5, 10, 20):
                assert [m.id for m in mem.recall(query, top_k=top_k, now=NOW)] == fifty[:top_k], (query, top_k)


def test_a_memory_found_by_meaning_scores_for_a_common_word_it_holds(tmp_path: Path):
    """"team" is in half the log: a search by words keeps only its best matches, yet
    the memory found by meaning that also says "team" gets the word's score."""
    pytest.importorskip("onnxruntime", reason="the 'local' extra (onnxruntime) is not installed")
    pytest.importorskip("tokenizers", reason="the 'local' extra (tokenizers) is not installed")
    with Mnemosyne(session_id="a", db_path=tmp_path / "m.db", embedder="local", dedupe_window=0) as mem:
        log = team_log(300)
        log.insert(150, {"content": ALLERGY, "importance": 0.5})
        mem.remember_many(log)
        for top_k in (1, 5, 10, 50):
            assert mem.recall("food allergies on the team", top_k=top_k, now=NOW)[0].content == ALLERGY, top_k


def test_past_fifty_results_each_signal_searches_as_deep_as_asked(tmp_path: Path):
    with Mnemosyne(session_id="a", db_path=tmp_path / "m.db", embedder="none", dedupe_window=0) as mem:
        # Numbered: copies of one text are one result.
        mem.remember_many([{**entry, "content": f"{entry['content']} Entry {i}."}
                           for i, entry in enumerate(team_log(400))])
        assert len(mem.recall("team", top_k=180, now=NOW)) == 180
