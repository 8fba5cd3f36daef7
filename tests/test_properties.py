"""Property tests: any text and any JSON metadata survive every path in and out exactly."""

from __future__ import annotations

import itertools
import json
import math
import tempfile
import unicodedata
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mnemosyne import Mnemosyne
from mnemosyne.dr.recovery import create_backup, restore_backup
from snapshots import snapshot

pytestmark = pytest.mark.usefixtures("lexical_only")  # storage, not ranking: no model

PROPERTY = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# Each example of these builds two or three databases on disk (with fsyncs): fewer examples.
ON_DISK = settings(PROPERTY, max_examples=25)

# Pieces real users paste: emoji (incl. ZWJ sequences and flags), RTL scripts and marks,
# combining characters on their own, zero-width and BOM characters, line breaks.
SPECIAL = [
    "👩‍💻", "🦉", "🇺🇦", "😀", "שלום", "مرحبا", "\u200f", "\u202e", "\u200d", "\ufeff",
    "e\u0301", "\u0301", "\u0308\u0308", "ﬁ", "Ⅻ", "𝔘𝔫𝔦", "\r\n", "\u2028", "\t", "\"", "'", "*",
    "NEAR", "AND", "OR", "NOT", "-", "(", ")", ":", "^", "'; DROP TABLE memories; --",
]
chars = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")
texts = st.lists(st.one_of(st.text(chars, min_size=1, max_size=12), st.sampled_from(SPECIAL)),
                 min_size=1, max_size=8).map("".join).filter(lambda s: s.strip())

json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=20),
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)
metadatas = st.dictionaries(st.text(max_size=12), json_values, max_size=5)
times = st.none() | st.datetimes(
    min_value=datetime(1900, 1, 1), max_value=datetime(2200, 1, 1), timezones=st.just(timezone.utc)
)
items = st.lists(
    st.tuples(texts, metadatas, st.sampled_from(["session", "global"]), st.sampled_from(["s1", "s2"]), times),
    min_size=1, max_size=3,
)


def same_json(a: Any, b: Any) -> bool:
    """Equal including types and key order (``1 == 1.0 == True`` is not enough)."""
    return a == b and json.dumps(a) == json.dumps(b)


def fill(db: Path, entries: list[tuple]) -> list[str]:
    """Store ``entries`` in order, each from its own session; return their ids.

    Exact repeats are kept (``dedupe_window=0``): each entry must survive on its own.
    """
    sessions = {session: Mnemosyne(session_id=session, db_path=db, dedupe_window=0) for *_, session, _ in entries}
    try:
        return [
            sessions[session].remember(content, scope=scope, metadata=metadata, created_at=created_at)
            for content, metadata, scope, session, created_at in entries
        ]
    finally:
        for mem in sessions.values():
            mem.close()


@pytest.fixture(scope="module")
def shared(lexical_only: None, tmp_path_factory: pytest.TempPathFactory) -> Mnemosyne:
    mem = Mnemosyne(session_id="props", db_path=tmp_path_factory.mktemp("props") / "memories.db", dedupe_window=0)
    yield mem
    mem.close()


_words = itertools.count()


@PROPERTY
@given(content=texts, metadata=metadatas)
def test_remember_then_get_returns_content_and_metadata_exactly(
    shared: Mnemosyne, content: str, metadata: dict
) -> None:
    memory = shared.get(shared.remember(content, metadata=metadata))
    assert memory.content == content
    assert same_json(memory.metadata, metadata)


@PROPERTY
@given(text=texts, created_at=times)
def test_recall_by_a_distinctive_word_finds_the_exact_text(shared: Mnemosyne, text: str, created_at) -> None:
    word = f"zq{next(_words)}x"
    content = f"{text} {word}"
    memory_id = shared.remember(content, created_at=created_at)
    hits = shared.recall(word, top_k=5)
    assert (hits[0].id, hits[0].content) == (memory_id, content)
    assert hits[0].score is not None and math.isfinite(hits[0].score) and hits[0].score > 0
    if created_at is not None:
        assert hits[0].created_at == created_at


@ON_DISK
@given(entries=items)
def test_export_then_import_into_a_fresh_database_is_exact(entries: list[tuple]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        source, fresh, export = Path(folder, "a.db"), Path(folder, "b.db"), Path(folder, "x.jsonl")
        ids = fill(source, entries)
        with Mnemosyne(db_path=source) as mem:
            assert mem.export_jsonl(export) == len(entries)
        with Mnemosyne(db_path=fresh) as mem:
            assert mem.import_jsonl(export) == len(entries)
            assert mem.import_jsonl(export) == 0
        before, after = snapshot(source), snapshot(fresh)
        assert sorted(after) == sorted(ids)
        for memory_id in ids:
            assert after[memory_id] == before[memory_id]
            assert same_json(after[memory_id]["metadata"], before[memory_id]["metadata"])
        for memory_id, (content, metadata, *_rest, created_at) in zip(ids, entries, strict=True):
            assert after[memory_id]["content"] == content
            assert same_json(after[memory_id]["metadata"], metadata)
            if created_at is not None:
                assert after[memory_id]["created_at"] == created_at.isoformat()


@ON_DISK
@given(entries=items)
def test_backup_then_restore_into_a_fresh_path_is_exact(entries: list[tuple]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        source, backup, restored = Path(folder, "a.db"), Path(folder, "b.bak"), Path(folder, "r", "c.db")
        ids = fill(source, entries)
        assert create_backup(db_path=source, backup_path=backup).memory_count == len(entries)
        restore_backup(backup_path=backup, db_path=restored)
        before, after = snapshot(source), snapshot(restored)
        assert sorted(after) == sorted(ids)
        for memory_id in ids:
            assert after[memory_id] == before[memory_id]
            assert same_json(after[memory_id]["metadata"], before[memory_id]["metadata"])


@pytest.fixture(scope="module")
def searchable(lexical_only: None, tmp_path_factory: pytest.TempPathFactory) -> Mnemosyne:
    mem = Mnemosyne(session_id="q", db_path=tmp_path_factory.mktemp("queries") / "memories.db")
    mem.remember_many(
        ["the quick brown fox", "NEAR AND OR NOT", "מרחבים ومرحبا 🦉 e\u0301", '"quoted" *star* -minus']
    )
    yield mem
    mem.close()


@settings(max_examples=300, deadline=None)
@given(query=st.one_of(st.text(), texts).filter(lambda s: s.strip()), top_k=st.integers(1, 50))
def test_recall_never_raises_for_any_query_text(searchable: Mnemosyne, query: str, top_k: int) -> None:
    results = searchable.recall(query, top_k=top_k)
    assert isinstance(results, list) and len(results) <= top_k
    assert all(m.score is not None and math.isfinite(m.score) for m in results)


@pytest.mark.parametrize("stored_form", ["NFC", "NFD"])
def test_a_decomposed_query_finds_the_word(db_path: Path, stored_form: str) -> None:
    with Mnemosyne(db_path=db_path) as mem:
        memory_id = mem.remember(unicodedata.normalize(stored_form, "updated my résumé yesterday"))
        mem.remember("an unrelated note about lunch")
        assert mem.recall(unicodedata.normalize("NFC", "résumé"))[0].id == memory_id
        hits = mem.recall(unicodedata.normalize("NFD", "résumé"))
        assert hits and hits[0].id == memory_id
