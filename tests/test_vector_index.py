"""The in-process vector index: exact search, and the sign-bit shortlist of large indexes."""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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


def test_any_memory_s_similarity_is_its_cosine_in_a_search(corpus: Path):
    """Candidates found by their words are given the similarity a search that went
    deep enough would have; seqs without a vector are left out."""
    index = loaded(corpus)
    query = queries(1)[0]
    every = dict(index.search(query, Filters(viewer_session="a"), 300))
    far = sorted(every, key=every.get)[:20]
    assert dict(index.similarities(query, [*far, 10_000])) == pytest.approx({seq: every[seq] for seq in far}, abs=1e-6)


GAP = 3600.0  # seconds between events of one episode


def window_index(tmp_path: Path, events: list[tuple[str, str, str, int]]) -> tuple[VectorIndex, dict[str, int], Path]:
    """An index over ``events`` of (session, scope, text, minute), written in list
    order; returns it with each text's seq."""
    db = tmp_path / "w.db"
    for session, scope, text, minute in events:
        with Mnemosyne(session_id=session, db_path=db, embedder=HashEmbedder(DIMENSION)) as mem:
            mem.remember(text, scope=scope, created_at=1_700_000_000 + 60 * minute)
    conn = sqlite3.connect(db)
    seqs = {text: seq for seq, text in conn.execute("SELECT seq, content FROM memories")}
    conn.close()
    return loaded(db), seqs, db


def assert_windows(index: VectorIndex, seqs: dict[str, int], expected: dict[str, list[str]]) -> None:
    """Each memory's window similarity is the cosine to the mean vector of the texts given."""
    query = queries(1)[0]
    got = dict(index.window_similarities(query, [seqs[text] for text in expected], GAP))
    for text, window in expected.items():
        mean = HashEmbedder(DIMENSION).embed(window).astype(np.float16).astype(np.float32).sum(axis=0)
        assert got[seqs[text]] == pytest.approx(float(mean @ query / np.linalg.norm(mean)), abs=1e-5), text


def test_a_window_is_the_memory_and_its_nearest_neighbours_in_its_sessions_time(tmp_path: Path):
    # Written out of order and interleaved with another session: neighbours follow
    # each session's clock, not the order of writes.
    index, seqs, _ = window_index(tmp_path, [
        ("a", "session", "redfox owl", 3), ("b", "session", "bluefox eel", 2), ("a", "session", "greenelk", 1),
        ("a", "session", "goldyak bee", 2), ("b", "session", "greyant", 1), ("a", "session", "redcod", 4),
    ])
    assert_windows(index, seqs, {
        "goldyak bee": ["greenelk", "goldyak bee", "redfox owl"],
        "greenelk": ["greenelk", "goldyak bee"],
        "redcod": ["redfox owl", "redcod"],
        "bluefox eel": ["greyant", "bluefox eel"],
    })


def test_a_global_memorys_window_holds_only_global_neighbours(tmp_path: Path):
    index, seqs, _ = window_index(tmp_path, [
        ("a", "global", "redfox", 1), ("a", "session", "private bluefox", 2), ("a", "global", "greenelk", 3),
    ])
    assert_windows(index, seqs, {
        "redfox": ["redfox", "greenelk"],
        # A session memory sees every neighbour of its own session.
        "private bluefox": ["redfox", "private bluefox", "greenelk"],
    })


def test_a_memorys_similarity_to_its_neighbours_is_to_the_mean_of_their_vectors(tmp_path: Path):
    index, seqs, _ = window_index(tmp_path, [
        ("a", "session", "redfox owl", 1), ("a", "session", "redfox eel", 2), ("a", "session", "greenelk", 3),
        ("b", "session", "bluecod", 1),
    ])
    vector = {text: HashEmbedder(DIMENSION).embed([text])[0].astype(np.float16).astype(np.float32) for text in seqs}

    def expected(text: str, neighbours: list[str]) -> float:
        mean = sum(vector[neighbour] for neighbour in neighbours)
        return pytest.approx(float(vector[text] @ mean / np.linalg.norm(mean)), abs=1e-5)

    got = dict(index.neighbour_similarities(seqs.values(), GAP))
    assert got[seqs["redfox eel"]] == expected("redfox eel", ["redfox owl", "greenelk"])
    assert got[seqs["redfox owl"]] == expected("redfox owl", ["redfox eel"])
    assert seqs["bluecod"] not in got  # alone in its session: no neighbours to be like


def test_windows_follow_new_neighbours_and_leave_out_what_has_no_vector(tmp_path: Path):
    index, seqs, db = window_index(tmp_path, [("a", "session", "redfox", 1), ("a", "session", "greenelk", 3)])
    assert_windows(index, seqs, {"redfox": ["redfox", "greenelk"]})
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    for text, minute in (("goldyak", 2), ("bluecod", 4)):  # between two events, then on the end
        with Mnemosyne(session_id="a", db_path=db, embedder=HashEmbedder(DIMENSION)) as mem:
            memory_id = mem.remember(text, created_at=1_700_000_000 + 60 * minute)
        seqs[text] = conn.execute("SELECT seq FROM memories WHERE id = ?", (memory_id,)).fetchone()[0]
        index.sync(conn)
    assert_windows(index, seqs, {"redfox": ["redfox", "goldyak"], "greenelk": ["goldyak", "greenelk", "bluecod"]})
    assert [seq for seq, _ in index.window_similarities(queries(1)[0], [10_000], GAP)] == []  # no such vector
    # Summaries and facts stand alone, and are no event's neighbour.
    conn.execute("UPDATE memories SET kind = 'fact' WHERE seq = ?", (seqs["greenelk"],))
    conn.commit()
    index.sync(conn)
    conn.close()
    assert_windows(index, seqs, {"greenelk": ["greenelk"], "goldyak": ["redfox", "goldyak", "bluecod"]})


def test_a_window_stops_at_a_pause(tmp_path: Path):
    # 61 minutes of silence: the next event starts another episode.
    index, seqs, _ = window_index(tmp_path, [
        ("a", "session", "redfox", 0), ("a", "session", "greenelk", 1), ("a", "session", "goldyak", 62),
    ])
    assert_windows(index, seqs, {"greenelk": ["redfox", "greenelk"], "goldyak": ["goldyak"]})


def reference_windows(conn: sqlite3.Connection, query: np.ndarray) -> dict[int, float]:
    """The window rule written the slow way, from the rows themselves."""
    rows = conn.execute(
        "SELECT m.seq, m.session_id, m.scope, m.kind, m.created_at, v.vector FROM memories AS m "
        "JOIN memory_vectors AS v ON v.seq = m.seq ORDER BY m.created_at, m.seq").fetchall()
    vectors = {row[0]: vector_index.decode_vectors([row[5]], DIMENSION)[0] for row in rows}
    expected = {}
    for seq, session, scope, kind, created, _ in rows:
        window = [seq]
        if kind == "episodic":
            timeline = [r for r in rows
                        if r[1] == session and r[3] == "episodic" and (scope == "session" or r[2] == "global")]
            at = [r[0] for r in timeline].index(seq)
            for other in (at - 1, at + 1):  # one neighbour a side, no more than GAP away
                if 0 <= other < len(timeline) and abs(timeline[other][4] - created) <= GAP:
                    window.append(timeline[other][0])
        mean = np.sum([vectors[s] for s in window], axis=0)
        expected[seq] = float(mean @ query / np.linalg.norm(mean))
    return expected


writes = st.tuples(st.sampled_from("ab"), st.sampled_from(["session", "global"]), st.integers(0, 240),
                   st.sampled_from(WORDS))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(writes, min_size=1, max_size=6), min_size=1, max_size=4))
def test_windows_match_the_rule_whatever_the_order_of_writes(batches):
    """Batches of writes in any order of time, across sessions and scopes, synced one
    batch at a time: every window is what the rule says, incremental or relinked."""
    with tempfile.TemporaryDirectory() as tmp:
        check_windows_batch_by_batch(Path(tmp) / "m.db", batches)


def check_windows_batch_by_batch(db: Path, batches: list[list[tuple[str, str, int, str]]]) -> None:
    index = VectorIndex(DIMENSION)
    query = queries(1)[0]
    for batch in batches:
        for session, scope, minute, word in batch:
            with Mnemosyne(session_id=session, db_path=db, embedder=HashEmbedder(DIMENSION)) as mem:
                mem.remember(f"{word} {minute}", scope=scope, created_at=1_700_000_000 + 60 * minute,
                             allow_duplicate=True)
        conn = sqlite3.connect(db)
        conn.row_factory = sqlite3.Row
        index.sync(conn)
        expected = reference_windows(conn, query)
        conn.close()
        got = dict(index.window_similarities(query, expected, GAP))
        assert got == pytest.approx(expected, abs=1e-5)
