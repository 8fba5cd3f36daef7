"""remember / recall / get / update / forget on a real SQLite file."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from mnemosyne import InvalidInputError, Memory, MemoryNotFoundError, Mnemosyne
from mnemosyne.memory import default_db_path


@pytest.fixture
def mem(tmp_path: Path):
    with Mnemosyne(session_id="agent-a", db_path=tmp_path / "memories.db") as instance:
        yield instance


def test_remember_returns_time_sortable_ids(mem: Mnemosyne):
    ids = [mem.remember(f"event number {i}") for i in range(50)]
    assert ids == sorted(ids)
    assert len(set(ids)) == 50


CHECKLIST = ["verify the migrations ran on staging", "take a fresh backup of the primary", "check the error budget",
             "announce the window in #deploys", "freeze merges to main", "tag the release",
             "watch the dashboards for ten minutes", "roll back if the error rate doubles"]


def test_recall_returns_full_memories_best_first(mem: Mnemosyne):
    # Far past the model's 256 tokens: stored, returned and printed whole.
    long_text = "The deploy checklist: " + " ".join(
        f"Step {i + 1}: {CHECKLIST[i % len(CHECKLIST)]}." for i in range(120))
    mem.remember(long_text, source="ops", importance=0.9, metadata={"ticket": 7})
    mem.remember("Lunch was a sandwich")
    mem.remember("The deploy went fine after the checklist")
    results = mem.recall("deploy checklist", top_k=5)
    assert all(isinstance(r, Memory) and r.score is not None for r in results)
    assert [r.score for r in results] == sorted((r.score for r in results), reverse=True)
    # The unrelated neighbour may be found through its episode context, but below both.
    assert all("sandwich" not in r.content for r in results[:2])
    top = next(r for r in results if r.content == long_text)
    assert (top.source, top.importance, top.metadata, top.session_id) == ("ops", 0.9, {"ticket": 7}, "agent-a")
    assert str(top) == long_text  # printing a result shows its whole content


def test_recall_respects_top_k_after_filters(mem: Mnemosyne):
    for i in range(20):
        mem.remember(f"status update {i}", source="noise")
    wanted = mem.remember("status update from the tracker", source="tracker")
    results = mem.recall("status update", top_k=1, source="tracker")
    assert [r.id for r in results] == [wanted]


def test_recall_time_filters_use_created_at(mem: Mnemosyne):
    base = datetime(2026, 5, 1, tzinfo=timezone.utc)
    for day in range(5):
        mem.remember(f"daily standup notes day {day}", created_at=base + timedelta(days=day))
    results = mem.recall("standup notes", since=base + timedelta(days=1), until=base + timedelta(days=3))
    assert sorted(r.content for r in results) == [f"daily standup notes day {d}" for d in (1, 2, 3)]
    assert results[0].created_at.tzinfo is not None


@pytest.mark.parametrize(
    "query",
    ['"unbalanced', "design*", "-design", "NEAR(design progress)", "design AND OR NOT",
     "'; DROP TABLE memories; --", "🙂🎉", "(((", "col:design", "^design", "design + progress"],
)
def test_any_query_text_is_safe(mem: Mnemosyne, query: str):
    mem.remember("design progress is good")
    assert isinstance(mem.recall(query), list)
    assert mem.get_stats().total == 1


def test_operators_in_queries_are_words(mem: Mnemosyne):
    mem.remember("we chose NEAR real time sync")
    assert [r.content for r in mem.recall("NEAR")] == ["we chose NEAR real time sync"]


def test_update_changes_content_and_index(mem: Mnemosyne):
    memory_id = mem.remember("the font is Helvetica", importance=0.2)
    updated = mem.update(memory_id, content="the font is Inter", importance=0.6, metadata={"v": 2})
    assert (updated.content, updated.importance, updated.metadata) == ("the font is Inter", 0.6, {"v": 2})
    assert all("Helvetica" not in r.content for r in mem.recall("Helvetica"))
    assert [r.id for r in mem.recall("Inter")] == [memory_id]
    with pytest.raises(InvalidInputError, match="at least one of content, importance or metadata"):
        mem.update(memory_id)  # nothing to change: refused, not a silent no-op


def test_forget_removes_from_every_index_and_leaves_a_tombstone(mem: Mnemosyne, tmp_path: Path):
    memory_id = mem.remember("secret launch codename Bluebird")
    mem.forget(memory_id)
    assert mem.get(memory_id) is None
    assert mem.recall("Bluebird") == []
    with pytest.raises(MemoryNotFoundError):
        mem.forget(memory_id)
    with sqlite3.connect(tmp_path / "memories.db") as conn:
        ops = conn.execute("SELECT op FROM audit_log WHERE memory_id = ? ORDER BY seq", (memory_id,)).fetchall()
        fts_hits = conn.execute("SELECT count(*) FROM memories_fts WHERE memories_fts MATCH 'Bluebird'").fetchone()
        logged_text = conn.execute("SELECT group_concat(detail) FROM audit_log").fetchone()[0]
    assert [op for (op,) in ops] == ["remember", "forget"]
    assert fts_hits == (0,)
    assert "Bluebird" not in logged_text  # the log explains, it does not keep the text


def test_forgotten_text_leaves_the_files(tmp_path: Path):
    db = tmp_path / "m.db"

    def files_hold(needle: bytes) -> bool:
        return any(needle in path.read_bytes().lower() for path in tmp_path.iterdir())

    with Mnemosyne(db_path=db, embedder="none") as mem:
        for i in range(30):
            mem.remember(f"filler note {i} about the build pipeline")
        secret = mem.remember("The vault passphrase is Hunter2SecretZebra. " + "padding words " * 500)
        mem.forget(secret)
    assert not files_hold(b"the vault passphrase is hunter2secretzebra")  # the text, at once
    with Mnemosyne(db_path=db, embedder="none") as mem:
        mem.sleep()
    assert not files_hold(b"hunter2secretzebra")  # and the index's words, after a sleep


def test_audit_log_is_append_only(mem: Mnemosyne, tmp_path: Path):
    mem.remember("anything")
    with sqlite3.connect(tmp_path / "memories.db") as conn:
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            conn.execute("DELETE FROM audit_log")
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            conn.execute("UPDATE audit_log SET op = 'x'")


def test_remember_many_is_one_transaction(mem: Mnemosyne):
    ids = mem.remember_many(["first", {"content": "second", "importance": 0.9, "scope": "global"}])
    assert [mem.get(i).content for i in ids] == ["first", "second"]
    with pytest.raises(InvalidInputError, match="item 1"):
        mem.remember_many(["fine", {"content": "bad", "importance": 3}])
    with pytest.raises(InvalidInputError, match="item 0"):
        mem.remember_many([{"text": "wrong key"}])
    assert mem.get_stats().total == 2


def test_created_at_and_valid_until_round_trip(mem: Mnemosyne):
    when = datetime(2023, 5, 8, 13, 56, 0, 123456, tzinfo=timezone.utc)
    memory_id = mem.remember("met Caroline", created_at=when, valid_until="2030-01-01T00:00:00Z")
    memory = mem.get(memory_id)
    assert memory.created_at == when
    assert memory.valid_until == datetime(2030, 1, 1, tzinfo=timezone.utc)
    naive = mem.get(mem.remember("naive times are UTC", created_at=datetime(2024, 1, 1, 12)))
    assert naive.created_at == datetime(2024, 1, 1, 12, tzinfo=timezone.utc)


def test_stats_report_counts(mem: Mnemosyne, tmp_path: Path):
    mem.remember("a")
    mem.remember("b", scope="global")
    Mnemosyne(session_id="agent-b", db_path=tmp_path / "memories.db").remember("c")
    stats = mem.get_stats()
    assert stats.total == 3 and stats.active == 3
    assert stats.by_scope == {"global": 1, "session": 2}
    assert stats.by_session == {"agent-a": 2, "agent-b": 1}
    assert stats.by_kind == {"episodic": 3}
    assert stats.schema_version >= 1 and stats.db_size_bytes > 0
    assert stats.last_backup_at is None and stats.last_sleep_at is None


def test_memories_persist_across_processes(tmp_path: Path):
    db = tmp_path / "nested" / "dirs" / "memories.db"
    code = (
        "import sys\nfrom mnemosyne import Mnemosyne\n"
        "Mnemosyne(session_id='job', db_path=sys.argv[1]).remember('checkpoint: step 3 of 7 done')\n"
    )
    subprocess.run([sys.executable, "-c", code, str(db)], check=True, timeout=60)
    with Mnemosyne(session_id="job", db_path=str(db)) as mem:
        assert [r.content for r in mem.recall("checkpoint step")] == ["checkpoint: step 3 of 7 done"]


def test_an_in_memory_database_is_refused():
    # Each SQLite connection to ":memory:" is a separate, empty database.
    with pytest.raises(InvalidInputError, match="temporary folder"):
        Mnemosyne(db_path=":memory:")


@pytest.mark.parametrize("data_home", [None, "", "relative/data", "~/data"])
def test_a_relative_or_unset_xdg_data_home_means_the_home_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data_home: str | None
):
    monkeypatch.delenv("MNEMOSYNE_DB", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    if data_home is None:
        monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_DATA_HOME", data_home)
    assert default_db_path() == tmp_path / "home" / ".local" / "share" / "mnemosyne" / "memories.db"
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert default_db_path() == tmp_path / "data" / "mnemosyne" / "memories.db"


def test_default_path_comes_from_the_environment(tmp_path: Path):
    code = "from mnemosyne import remember, recall, get_stats\nremember('via env')\nprint(get_stats().db_path)"
    env = {"MNEMOSYNE_DB": str(tmp_path / "env.db"), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(tmp_path / "env.db")
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("env.db-")) == ["env.db"]
