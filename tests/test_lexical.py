"""Lexical search in a large memory: rare terms find candidates, every term scores them."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from mnemosyne import Mnemosyne
from mnemosyne.core import lexical
from mnemosyne.core.lexical import fts_queries

NOW = datetime(2026, 6, 1, tzinfo=timezone.utc)


def test_a_small_memory_searches_every_term_in_one_query():
    assert fts_queries(["deploy", "friday"], {"deploy": 4000, "friday": 10}, total=4_000) == [
        '"deploy" OR "friday"']


def test_past_the_threshold_rare_terms_find_and_common_terms_only_score(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(lexical, "POSTINGS_BUDGET", 100)
    counts = {"the": 9000, "deploy": 3000, "kubernetes": 40, "helm": 50}
    rare, common = '"kubernetes" OR "helm"', '"deploy" OR "the"'
    assert fts_queries(list(counts), counts, total=50_000) == [
        f"({rare}) NOT ({common})", f"({rare}) AND ({common})"]


def test_the_rarest_term_always_finds_candidates(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(lexical, "POSTINGS_BUDGET", 10)
    counts = {"deploy": 3000, "release": 2000}
    assert fts_queries(list(counts), counts, total=50_000)[0] == '("release") NOT ("deploy")'


def test_memories_rare_terms_find_get_the_whole_query_s_score(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """With a budget so small that only "zebrafish" finds candidates, recall ranks and
    scores exactly as when every term is searched: the common terms still count."""
    with Mnemosyne(session_id="a", db_path=tmp_path / "m.db", embedder="none") as mem:
        mem.remember_many([{"content": f"the weekly deploy note {i}"} for i in range(60)])
        mem.remember("zebrafish and the weekly deploy went out on time with every check green")
        mem.remember("zebrafish")
        monkeypatch.setattr(lexical, "COMMON_TERMS_FROM", 10)

        def ranking(budget: int) -> list[tuple[str, float]]:
            monkeypatch.setattr(lexical, "POSTINGS_BUDGET", budget)
            found = mem.recall("zebrafish weekly deploy", top_k=3, now=NOW)
            return [(m.content, m.score) for m in found]

        assert ranking(5) == ranking(10**9)
