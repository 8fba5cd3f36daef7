"""The in-process vector index: exact search, and the sign-bit shortlist of large indexes."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from mnemosyne import Mnemosyne
from mnemosyne.storage.base import Filters
from mnemosyne.storage.sqlite import vector_index
from mnemosyne.storage.sqlite.vector_index import VectorIndex, sign_codes
from mnemosyne.testing import HashEmbedder

DIMENSION = 64
ANIMALS = ("fox", "owl", "elk", "yak", "eel", "ant", "bee", "cod")
WORDS = [f"{colour}{animal}" for colour in ("red", "blue", "green", "gold", "grey") for animal in ANIMALS]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """300 memories of random word mixes, half from source "ops", half from "noise"."""
    db = tmp_path_factory.mktemp("index") / "m.db"
    rng = np.random.default_rng(7)
    with Mnemosyne(session_id="a", db_path=db, embedder=HashEmbedder(DIMENSION)) as mem:
        mem.remember_many([
            {"content": " ".join(rng.choice(WORDS, size=5, replace=False)), "source": "ops" if i % 2 else "noise"}
            for i in range(300)
        ])
    return db


def loaded(db: Path) -> VectorIndex:
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    index = VectorIndex(DIMENSION)
    index.sync(conn)
    conn.close()
    return index


def queries(count: int) -> np.ndarray:
    rng = np.random.default_rng(11)
    return HashEmbedder(DIMENSION).embed([" ".join(rng.choice(WORDS, size=3, replace=False)) for _ in range(count)])


@pytest.fixture
def shortlisting(monkeypatch: pytest.MonkeyPatch):
    """Every search goes through the shortlist, of ``size`` rows."""

    def use(size: int) -> None:
        monkeypatch.setattr(vector_index, "EXACT_UP_TO", 0)
        monkeypatch.setattr(vector_index, "SHORTLIST_MIN", size)
        monkeypatch.setattr(vector_index, "SHORTLIST_PER_RESULT", 1)

    return use


def test_sign_codes_pack_one_bit_per_dimension_into_whole_words():
    vectors = np.array([[1.0, -1.0] * 40, [-0.5] * 80], dtype=np.float32)
    codes = sign_codes(vectors)
    assert codes.shape == (2, 2) and codes.dtype == np.uint64  # 80 bits round up to two words
    assert [int(np.bitwise_count(row).sum()) for row in codes] == [40, 0]


def test_a_shortlist_as_large_as_the_allowed_rows_is_exact(corpus: Path, shortlisting):
    index = loaded(corpus)
    filters = Filters(viewer_session="a", sources=("ops",))
    exact = [index.search(q, filters, 10) for q in queries(5)]
    shortlisting(150)  # exactly the 150 "ops" rows
    assert [index.search(q, filters, 10) for q in queries(5)] == exact


def test_a_short_shortlist_returns_exact_cosines_of_allowed_rows_only(corpus: Path, shortlisting):
    index = loaded(corpus)
    filters = Filters(viewer_session="a", sources=("ops",))
    exact = dict(index.search(queries(1)[0], filters, 300))
    shortlisting(20)
    hits = index.search(queries(1)[0], filters, 10)
    assert len(hits) == 10
    assert all(seq in exact and score == pytest.approx(exact[seq], abs=1e-6) for seq, score in hits)
    assert [score for _, score in hits] == sorted((score for _, score in hits), reverse=True)


def test_a_shortlist_keeps_most_of_the_exact_top_k(corpus: Path, shortlisting):
    """Sign bits order vectors by angle roughly: a shortlist of 40 of 300 keeps most
    of the exact top 5, where a random one would keep about 13%."""
    index = loaded(corpus)
    filters = Filters(viewer_session="a")
    exact = [{seq for seq, _ in index.search(q, filters, 5)} for q in queries(20)]
    shortlisting(40)
    kept = [len(e & {seq for seq, _ in index.search(q, filters, 5)}) for e, q in zip(exact, queries(20), strict=True)]
    assert sum(kept) >= 0.7 * 5 * len(kept)
