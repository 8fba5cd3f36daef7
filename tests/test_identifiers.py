"""A query word the index splits into several tokens (a version, an address, a file
name) is also searched as the phrase of its tokens, so the memory holding that exact
word comes before those holding its parts in another order."""

from __future__ import annotations

import random
from datetime import datetime, timezone
from pathlib import Path

import pytest

from mnemosyne import Mnemosyne
from mnemosyne.core import lexical
from mnemosyne.core.temporal import asks_only_when
from mnemosyne.testing import HashEmbedder

NOW = datetime(2026, 6, 1, tzinfo=timezone.utc)
EMBEDDERS = pytest.mark.parametrize("embedder", [HashEmbedder(), "none"], ids=["hash", "lexical"])


def test_a_word_the_index_splits_is_also_a_phrase():
    assert lexical.query_phrases("deployed v1.7.7 to production") == ["v1 7 7", "1 7 7"]
    assert lexical.search_terms("deployed v1.7.7 to production") == [
        "deployed", "v1", "7", "production", "v1 7 7", "1 7 7"]
    assert lexical.query_phrases("10.0.0.5 main.scss foo_bar 2026-04-09 e-mail v1.7.7 v1.7.7") == [
        "10 0 0 5", "main scss", "foo bar", "2026 04 09", "e mail", "v1 7 7", "1 7 7"]
    assert lexical.fts_query("v2.2.2") == '"v2" OR "2" OR "v2 2 2" OR "2 2 2"'


@EMBEDDERS
@pytest.mark.parametrize(("query", "stored"), [("2.4.0", "v2.4.0"), ("v2.4.0", "2.4.0"), ("(v3.1)", "3.1")])
def test_a_version_is_found_written_with_or_without_its_v(tmp_path: Path, embedder: object, query: str, stored: str):
    with Mnemosyne(session_id="ops", db_path=tmp_path / "m.db", embedder=embedder) as mem:
        mem.remember_many([f"Released {version} to the beta channel." for version in (
            "v2.4.1", "v2.40", "v4.2.0", "2.4.10", "v3.1.1", "3.10", "v0.2.4")])
        wanted = mem.remember(f"Released {stored} to the beta channel.")
        assert mem.recall(f"what changed in {query}", top_k=1, now=NOW)[0].id == wanted


@EMBEDDERS
@pytest.mark.parametrize(("query", "stored"), [
    ("PAY482", "PAY-482"), ("PAY-482", "PAY482"), ("what was pay482?", "PAY-482")])
def test_a_code_is_found_written_with_or_without_its_hyphen(tmp_path: Path, embedder: object, query: str, stored: str):
    with Mnemosyne(session_id="ops", db_path=tmp_path / "m.db", embedder=embedder) as mem:
        mem.remember_many([f"Ticket {code}: the refund test is flaky." for code in (
            "PAY-481", "PAY-4821", "OPS-482", "PAYOUT-482", "PAY481", "OPS482")])
        wanted = mem.remember(f"Ticket {stored}: the refund test is flaky.")
        assert mem.recall(query, top_k=1, now=NOW)[0].id == wanted


def test_a_word_that_splits_off_only_stopwords_is_no_phrase():
    assert lexical.query_phrases("Priya's lunch, don't can't U.S. plain words") == []


def test_a_date_written_as_one_word_still_asks_only_about_its_time():
    assert asks_only_when("what happened on 2026-04-09")
    assert not asks_only_when("the v1.7.7 deploy on 2026-04-09")


@EMBEDDERS
def test_an_exact_version_comes_before_its_siblings(tmp_path: Path, embedder: object):
    rng = random.Random(1)
    versions = [f"v{major}.{minor}.{patch}" for major in (1, 2) for minor in range(10) for patch in range(15)]
    rng.shuffle(versions)  # a version's neighbours in time are others, unlike it
    with Mnemosyne(session_id="ops", db_path=tmp_path / "m.db", embedder=embedder, dedupe_window=0) as mem:
        mem.remember_many([
            {"content": f"Deployed {rng.choice(['checkout-api', 'gateway', 'billing'])} {version} to production.",
             "importance": round(rng.uniform(0.2, 0.8), 2)}
            for version in versions
        ])
        for version in rng.sample(versions, 40):
            for query in (version, f"what happened with {version}", f"deployed {version} to production"):
                assert f" {version} " in mem.recall(query, top_k=3, now=NOW)[0].content, query


@EMBEDDERS
@pytest.mark.parametrize(("wanted", "others", "template"), [
    ("10.0.0.5", ["10.0.0.50", "10.0.5.0", "10.5.0.0", "10.0.0.15", "5.0.0.10"], "Host {} stopped answering."),
    ("main.scss", ["main.py", "styles.scss", "main.css", "theme.scss"], "Edited {} to fix the header colours."),
    ("foo_bar", ["foo", "bar_foo", "foo_baz", "baz_bar"], "Renamed the helper {} in the utils module."),
    ("e-mail", ["mail", "e-commerce", "email", "voice-mail"], "The {} template for invoices changed."),
], ids=["address", "file", "identifier", "hyphenated"])
def test_an_exact_identifier_comes_before_those_sharing_its_parts(
    tmp_path: Path, embedder: object, wanted: str, others: list[str], template: str
):
    """Even when the others matter more."""
    with Mnemosyne(session_id="ops", db_path=tmp_path / "m.db", embedder=embedder, dedupe_window=0) as mem:
        mem.remember_many([{"content": template.format(other), "importance": 0.8} for other in others])
        mem.remember(template.format(wanted), importance=0.3)
        assert mem.recall(wanted, top_k=3, now=NOW)[0].content == template.format(wanted)
