"""A long-lived process's vector index, caught up change by change, answers exactly
as a fresh process's, whatever other processes did in between."""

from __future__ import annotations

import multiprocessing
import random
import sqlite3
import time
from pathlib import Path

import numpy as np
import pytest

from mnemosyne import Mnemosyne, MnemosyneError
from mnemosyne.dr.recovery import create_backup, restore_backup
from mnemosyne.storage.base import Filters
from mnemosyne.storage.sqlite import vector_index
from mnemosyne.storage.sqlite.vector_index import VectorIndex
from mnemosyne.testing import HashEmbedder

DIMENSION = 16  # few dimensions: many sign-bit ties, so ties must fall alike
WORDS = ["fox", "owl", "elk", "yak", "eel", "ant", "bee", "cod", "red", "blue", "gold", "grey"]
NOW = 1_750_000_000.0
OPERATIONS = ("remember", "remember", "remember_many", "edit", "edit", "importance", "forget", "forget", "sleep",
              "undo_sleep", "reembed", "unembedded", "backfill", "backup", "restore")


def _text(rng: random.Random) -> str:
    return " ".join(rng.sample(WORDS, 3))


def _operate(db: str, seed: int, steps: int) -> None:
    """Another process: ``steps`` random writes of every kind."""
    rng = random.Random(seed)
    backup = f"{db}.{seed}.bak"
    mem = Mnemosyne(session_id=rng.choice("ab"), db_path=db, embedder=HashEmbedder(DIMENSION), dedupe_window=0,
                    auto_backfill=False)
    try:
        for _ in range(steps):
            op = rng.choice(OPERATIONS)
            with sqlite3.connect(db) as conn:
                ids = [memory_id for (memory_id,) in conn.execute("SELECT id FROM memories ORDER BY seq")]
            try:
                if op == "remember" or not ids and op in ("edit", "importance", "forget"):
                    mem.remember(_text(rng), scope=rng.choice(["session", "global"]),
                                 created_at=NOW + 60 * rng.randrange(600))
                elif op == "remember_many":
                    mem.remember_many([{"content": _text(rng), "scope": rng.choice(["session", "global"]),
                                        "created_at": NOW + 60 * rng.randrange(600)} for _ in range(5)])
                elif op == "edit":
                    mem.update(rng.choice(ids), content=_text(rng))
                elif op == "importance":
                    mem.update(rng.choice(ids), importance=rng.random())
                elif op == "forget":
                    mem.forget(rng.choice(ids))
                elif op == "sleep":
                    mem.sleep()
                elif op == "undo_sleep":
                    with sqlite3.connect(db) as conn:
                        runs = conn.execute("SELECT id FROM sleep_runs WHERE status = 'applied'").fetchall()
                    if runs:
                        mem.undo_sleep(rng.choice(runs)[0])
                elif op == "reembed":
                    mem.reembed(HashEmbedder(DIMENSION))
                elif op == "unembedded":  # the model was down: vectors come later, below older ones
                    with Mnemosyne(session_id="a", db_path=db, embedder="none", dedupe_window=0) as bare:
                        bare.remember(_text(rng), created_at=NOW + 60 * rng.randrange(600))
                elif op == "backfill":
                    mem.backfill_vectors()
                elif op == "backup":
                    create_backup(db_path=db, backup_path=backup)
                elif op == "restore" and Path(backup).exists():
                    mem.close()
                    restore_backup(backup_path=backup, db_path=db)
                    mem = Mnemosyne(session_id=rng.choice("ab"), db_path=db, embedder=HashEmbedder(DIMENSION),
                                    dedupe_window=0, auto_backfill=False)
            except MnemosyneError:  # e.g. a memory another step made invisible to this session
                pass
    finally:
        mem.close()


def _index(db: Path, index: VectorIndex | None = None) -> VectorIndex:
    index = index or VectorIndex(DIMENSION)
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    with conn:
        conn.execute("BEGIN")
        index.sync(conn)
    conn.close()
    return index


def _answers(index: VectorIndex, seqs: list[int]) -> list:
    """Everything the index answers, for queries under several filters."""
    queries = HashEmbedder(DIMENSION).embed([" ".join(WORDS[i : i + 3]) for i in range(0, 9, 2)])
    answers: list = [index.lacking(seqs), len(index)]
    for query in queries:
        for filters in (
            Filters(viewer_session="a"), Filters(viewer_session="b", scope="global"),
            Filters(viewer_session="a", statuses=("active",)), Filters(viewer_session="b", since=NOW + 60 * 300),
        ):
            found = index.nearest(query, filters, 7, field_rank=3)
            answers.append((found.hits, found.field))
        answers.append(sorted(index.similarities(query, seqs)))
        answers.append(sorted(index.window_similarities(query, seqs, 600.0)))
    return answers


@pytest.mark.parametrize("shortlist", [False, True])
def test_a_long_lived_index_answers_as_a_fresh_one_after_any_writes_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shortlist: bool
):
    if shortlist:  # every search through a shortlist shorter than the rows allowed
        monkeypatch.setattr(vector_index, "EXACT_UP_TO", 0)
        monkeypatch.setattr(vector_index, "SHORTLIST_MIN", 12)
    # Catching up is cheaper than reloading whatever the count, so most rounds catch up.
    monkeypatch.setattr(vector_index, "_CATCH_UP_MIN", 10_000)
    db = tmp_path / "m.db"
    with Mnemosyne(session_id="a", db_path=db, embedder=HashEmbedder(DIMENSION), dedupe_window=0) as mem:
        rng = random.Random(1)
        mem.remember_many([{"content": _text(rng), "scope": rng.choice(["session", "global"]),
                            "created_at": NOW + 60 * rng.randrange(600)} for _ in range(60)])
    long_lived = _index(db)
    context = multiprocessing.get_context("spawn")
    for round_ in range(12):
        writer = context.Process(target=_operate, args=(str(db), 100 * round_ + shortlist, 8))
        writer.start()
        writer.join(120)
        assert writer.exitcode == 0
        _index(db, long_lived)
        seqs = list(range(1, 200))
        assert _answers(long_lived, seqs) == _answers(_index(db), seqs), f"round {round_}"


def test_a_forget_or_an_edit_elsewhere_is_caught_up_without_a_reload(tmp_path: Path):
    db = tmp_path / "m.db"
    with Mnemosyne(session_id="a", db_path=db, embedder=HashEmbedder(DIMENSION)) as mem:
        ids = mem.remember_many([f"note {i} about {WORDS[i % len(WORDS)]}" for i in range(50)])
        index = _index(db)
        reloads = []
        original = index._clear
        index._clear = lambda: (reloads.append(1), original())[1]  # type: ignore[method-assign]
        mem.update(ids[3], content="an edited note about the quokka")
        mem.forget(ids[7])
        mem.forget(ids[-1])  # the last: its seq is taken again by the next memory
        mem.remember("a new note about the wombat")
        _index(db, index)
        assert not reloads
        assert _answers(index, list(range(1, 60))) == _answers(_index(db), list(range(1, 60)))
        with sqlite3.connect(db) as conn:  # the log keeps the latest changes only
            conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 5 WHERE key = 'index_epoch'")
        mem.forget(ids[9])
        _index(db, index)
        assert reloads == [1]  # an epoch the log cannot account for
        assert _answers(index, list(range(1, 60))) == _answers(_index(db), list(range(1, 60)))


def test_the_change_log_keeps_the_latest_ten_thousand(tmp_path: Path):
    db = tmp_path / "m.db"
    with Mnemosyne(session_id="a", db_path=db, embedder=HashEmbedder(DIMENSION)) as mem:
        ids = mem.remember_many([f"note {i}" for i in range(30)])
        started = time.perf_counter()
        for i in range(30):
            mem.update(ids[i % len(ids)], importance=(i % 10) / 10)
        assert time.perf_counter() - started < 10
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 20000 WHERE key = 'index_epoch'")
        conn.execute("UPDATE memories SET status = 'expired' WHERE seq = 1")
        epochs = [epoch for (epoch,) in conn.execute("SELECT epoch FROM index_changes")]
    assert len(epochs) == 1 and np.all(np.array(epochs) > 20000)
