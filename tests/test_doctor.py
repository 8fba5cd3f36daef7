"""`mnemosyne doctor`: a read-only diagnosis, and a repair that backs up first."""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import sqlite3
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from mnemosyne import DoctorReport, Mnemosyne, StorageError
from mnemosyne.core.timeutil import LATEST
from mnemosyne.dr import doctor
from mnemosyne.dr.recovery import verify_backup
from mnemosyne.storage.sqlite import derived
from mnemosyne.storage.sqlite.context_index import refresh_all_contexts
from mnemosyne.storage.sqlite.migrations import LATEST_VERSION

FIXTURES = Path(__file__).parent / "fixtures"


def files_digest(db: Path) -> str:
    parts = (db, db.with_name(db.name + "-wal"))
    return hashlib.sha256(b"".join(p.read_bytes() for p in parts if p.exists())).hexdigest()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "m.db"
    with Mnemosyne(session_id="s", db_path=path) as mem:
        ids = mem.remember_many([f"note {i} about the quarterly budget" for i in range(30)])
        mem.forget(ids[0])
    return path


def break_index(db: Path) -> None:
    """Simulate a damaged index: a row removed behind the full-text index's back."""
    with sqlite3.connect(db) as conn:
        conn.execute("DROP TRIGGER memories_fts_delete")
        conn.execute("DELETE FROM memories WHERE seq = (SELECT max(seq) FROM memories)")
        conn.execute(
            "CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN "
            "INSERT INTO memories_fts (memories_fts, rowid, content) "
            "VALUES ('delete', old.seq, old.content); END"
        )
        # ... and one row whose index entry is gone.
        seq, content = conn.execute("SELECT seq, content FROM memories LIMIT 1").fetchone()
        conn.execute(
            "INSERT INTO memories_fts (memories_fts, rowid, content) VALUES ('delete', ?, ?)", (seq, content)
        )


def test_a_healthy_database(db: Path):
    with Mnemosyne(session_id="s", db_path=db) as mem:
        before = files_digest(db)
        report = mem.doctor()
        assert files_digest(db) == before  # read-only
    assert isinstance(report, DoctorReport) and report.ok, report.problems
    names = [c.name for c in report.checks]
    assert names == [
        "file", "integrity", "schema", "index:memories_fts", "index:memories_context_fts",
        "index:memories_cjk_fts", "index:memory_vectors", "rows", "audit coverage", "lost memories"]
    assert report.schema_version == report.latest_schema_version
    assert json.loads(json.dumps(report.to_dict()))["ok"] is True


@pytest.mark.parametrize("name", ["what?.db", "team#1/m.db", "50%25off/m.db", "100%/m.db"])
def test_a_path_with_uri_characters_is_read_where_it_is(tmp_path: Path, name: str):
    # '?', '#' and '%' mean something in a file: URI; unquoted, doctor would read (and
    # SQLite create) a different file, and report a healthy database as broken.
    path = tmp_path / name
    path.parent.mkdir(exist_ok=True)
    with Mnemosyne(session_id="s", db_path=path) as mem:
        mem.remember("a healthy memory")
    report = doctor.diagnose(path)
    assert report.ok, report.problems
    assert report.schema_version == report.latest_schema_version
    # Only the database's own files (a read-only reader of a WAL file leaves -wal/-shm).
    own = {path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")}
    assert {p for p in tmp_path.rglob("*") if p.is_file()} <= own


def test_finds_and_repairs_a_damaged_index_after_a_backup(db: Path):
    break_index(db)
    report = doctor.diagnose(db)
    failing = {c.name: c.detail for c in report.problems}
    assert "missing from memories_fts" in failing["index:memories_fts"]
    assert "orphan" in failing["index:memories_fts"]
    assert "1 stored memories are missing" in failing["lost memories"]  # the row deleted behind our back
    assert "differ from their neighbours' text" in failing["index:memories_context_fts"]
    with Mnemosyne(session_id="s", db_path=db) as mem:
        # The row deleted behind its back left its neighbours' windows stale too: opening
        # rewrote them, as it does after a forget by a process of the previous release.
        repaired = mem.doctor(repair=True)
        assert repaired.repaired == ("memories_fts",)
        assert verify_backup(repaired.backup_path).memory_count == 28
        assert [c.name for c in repaired.problems] == ["lost memories"]  # reported, not hidden
        assert len(mem.recall("quarterly budget", top_k=50)) == 28
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT op FROM audit_log ORDER BY seq DESC LIMIT 1").fetchone() == ("repair",)


def test_a_stale_context_window_is_found_and_rebuilt(db: Path):
    with sqlite3.connect(db) as conn:  # forgotten words left in a neighbour's window
        conn.execute("UPDATE memories_context_fts SET context = context || ' quokka' WHERE rowid = 5")
    failing = {c.name: c.detail for c in doctor.diagnose(db).problems}
    assert failing == {"index:memories_context_fts": "1 episode context window(s) differ from their neighbours' text"}
    assert doctor.repair(db).repaired == ("memories_context_fts",)
    assert doctor.diagnose(db).ok
    with Mnemosyne(session_id="s", db_path=db) as mem:
        assert mem.recall("quokka") == []


@pytest.mark.parametrize("fixture", ["schema_v2.db", "schema_v3.db", "schema_v4.db", "schema_v5.db"])
def test_an_older_schema_is_not_held_to_the_windows_its_upgrade_rebuilds(tmp_path: Path, fixture: str):
    # Its windows follow an older release's rule; opening it rebuilds them all.
    db = tmp_path / "old.db"
    shutil.copyfile(FIXTURES / fixture, db)
    before = files_digest(db)
    report = doctor.diagnose(db)
    assert report.ok, report.problems
    contexts = {c.name: c.detail for c in report.checks}["index:memories_context_fts"]
    assert contexts.startswith("not checked: rebuilt from the rows by the upgrade")
    assert doctor.repair(db).repaired == ()  # nothing failed: nothing to do
    assert files_digest(db) == before
    cli = subprocess.run([sys.executable, "-m", "mnemosyne", "doctor", "--db", str(db)], capture_output=True, text=True)
    assert cli.returncode == 0 and "healthy" in cli.stdout


def test_repairing_an_older_schema_upgrades_it_and_then_checks_everything(tmp_path: Path):
    db = tmp_path / "old.db"
    shutil.copyfile(FIXTURES / "schema_v5.db", db)
    with sqlite3.connect(db) as conn:  # an index entry for no memory
        conn.execute("INSERT INTO memories_fts (rowid, content) VALUES (99999, 'ghost')")
    conn.close()
    assert [c.name for c in doctor.diagnose(db).problems] == ["index:memories_fts"]
    repaired = doctor.repair(db)
    assert repaired.repaired == ("memories_fts",)
    assert verify_backup(repaired.backup_path).memory_count == 14
    assert repaired.ok and repaired.schema_version == LATEST_VERSION
    assert {c.name: c.detail for c in repaired.checks}["index:memories_context_fts"] == "consistent"


def test_a_time_no_date_can_hold_is_reported_and_can_be_forgotten(db: Path):
    # Written by a version that did not check the range of times.
    with sqlite3.connect(db) as conn:
        (bad,) = conn.execute("SELECT id FROM memories LIMIT 1").fetchone()
        conn.execute("UPDATE memories SET created_at = 1e20 WHERE id = ?", (bad,))
        refresh_all_contexts(conn)  # that version's windows were made with this time
    report = doctor.diagnose(db)
    rows = next(check for check in report.checks if check.name == "rows")
    assert not report.ok and not rows.ok and bad in rows.detail
    with Mnemosyne(session_id="s", db_path=db) as mem:
        mem.forget(bad)
    assert doctor.diagnose(db).ok


def test_every_time_a_write_accepts_is_one_doctor_calls_healthy(tmp_path: Path):
    db = tmp_path / "edges.db"
    with Mnemosyne(session_id="s", db_path=db, embedder="none") as mem:
        last = mem.remember("the edge of time", created_at="9999-12-31T23:59:59.999999Z")
        mem.remember("the first moment", created_at="0001-01-01T00:00:00Z",
                     valid_until=datetime.max.replace(tzinfo=timezone.utc))
        assert mem.get(last).created_at.year == 9999
    done = subprocess.run([sys.executable, "-m", "mnemosyne", "doctor", "--db", str(db), "--json"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout
    # One float past the latest a write takes (year 10000 begins) is damage.
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE memories SET created_at = ? WHERE id = ?", (math.nextafter(LATEST, math.inf), last))
    assert not doctor.diagnose(db).ok


def test_a_damaged_file_is_reported_and_not_repaired(tmp_path: Path, db: Path):
    with open(db, "r+b") as handle:
        handle.truncate(4096 * 3)
    report = doctor.diagnose(db)
    assert not report.ok and report.problems[0].name == "integrity"
    with pytest.raises(StorageError, match="restore it from a backup"):
        doctor.repair(db)
    garbage = tmp_path / "notes.txt"
    garbage.write_text("not a database at all " * 50)
    assert "not a SQLite database" in doctor.diagnose(garbage).problems[0].detail
    assert doctor.diagnose(tmp_path / "missing.db").problems[0].name == "file"
    assert not (tmp_path / "missing.db").exists()


@pytest.mark.parametrize("damage", ["truncated", "nan", "infinite", "overwritten", "text"])
def test_a_damaged_vector_is_found_and_dropped_and_its_memory_embedded_again(db: Path, damage: str):
    with sqlite3.connect(db) as conn:
        (size,) = conn.execute("SELECT length(vector) FROM memory_vectors LIMIT 1").fetchone()
        # float16, little-endian: 0x7e00 is NaN, 0x7c00 infinity; ASCII bytes decode to
        # large finite numbers (a vector that would top every search by meaning).
        blob = {"truncated": b"\x01\x02", "nan": b"\x00\x7e" * (size // 2), "infinite": b"\x00\x7c" * (size // 2),
                "overwritten": (b"notes " * size)[:size], "text": "t" * size}
        damaged = conn.execute("SELECT min(seq) FROM memory_vectors").fetchone()[0]
        conn.execute("UPDATE memory_vectors SET vector = ? WHERE seq = ?", (blob[damage], damaged))
        vectors = conn.execute("SELECT count(*) FROM memory_vectors").fetchone()[0]
        texts = [text for (text,) in conn.execute("SELECT content FROM memories WHERE seq >= ? ORDER BY seq LIMIT 2",
                                                  (damaged,))]
    with Mnemosyne(session_id="s", db_path=db) as mem:
        hits = mem.recall("quarterly budget", top_k=50)  # not a crash, nor NaN scores, of every recall
        assert len(hits) == 29 and all(math.isfinite(hit.score) for hit in hits)
        # The damaged memory is found by its words, and tops no other's recall.
        assert [mem.recall(text, top_k=1)[0].content for text in texts] == texts
    (problem,) = doctor.diagnose(db).problems
    assert problem.name == "index:memory_vectors" and "1 damaged vector(s)" in problem.detail
    assert doctor.repair(db).ok
    with Mnemosyne(session_id="s", db_path=db) as mem:
        assert mem.backfill_vectors() == 1
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM memory_vectors").fetchone()[0] == vectors
    assert doctor.diagnose(db).ok


def test_other_derived_indexes_register_in_one_place(db: Path, monkeypatch: pytest.MonkeyPatch):
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE note_lengths (seq INTEGER PRIMARY KEY, n INTEGER)")
    calls = []

    def check(conn: sqlite3.Connection) -> list[str]:
        stale = conn.execute(
            "SELECT count(*) FROM memories WHERE seq NOT IN (SELECT seq FROM note_lengths)"
        ).fetchone()[0]
        return [f"{stale} stale"] if stale else []

    def rebuild(conn: sqlite3.Connection) -> None:
        calls.append("rebuild")
        conn.execute("INSERT OR REPLACE INTO note_lengths SELECT seq, length(content) FROM memories")

    extra = derived.DerivedIndex("note_lengths", "note_lengths", check, rebuild)
    monkeypatch.setattr(derived, "DERIVED_INDEXES", (*derived.DERIVED_INDEXES, extra))
    assert [c.name for c in doctor.diagnose(db).problems] == ["index:note_lengths"]
    assert doctor.repair(db).ok and calls == ["rebuild"]


def test_cli_doctor_exit_codes(db: Path):
    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "mnemosyne", *args], capture_output=True, text=True)

    healthy = cli("doctor", "--db", str(db))
    assert healthy.returncode == 0 and "healthy" in healthy.stdout
    break_index(db)
    sick = cli("doctor", "--db", str(db), "--json")
    assert sick.returncode == 3 and json.loads(sick.stdout)["ok"] is False
    fixed = cli("doctor", "--db", str(db), "--repair")
    assert "rebuilt memories_fts" in fixed.stdout and "lost memories" in fixed.stdout
