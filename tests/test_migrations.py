"""Databases written by every released schema open and upgrade with today's code."""

from __future__ import annotations

import shutil
import sqlite3
from datetime import datetime, timezone
from pathlib import Path

import pytest

from mnemosyne import Mnemosyne, StorageError
from mnemosyne.core.fingerprint import content_hash
from mnemosyne.storage.sqlite.migrations import LATEST_VERSION
from mnemosyne.storage.sqlite.snapshot import CLAIM
from mnemosyne.testing import HashEmbedder
from size_limit import under_size_limit

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def v1_db(tmp_path: Path) -> Path:
    db = tmp_path / "old.db"
    shutil.copyfile(FIXTURES / "schema_v1.db", db)
    return db


def test_schema_v1_database_opens_and_keeps_everything(v1_db: Path):
    with Mnemosyne(session_id="website-redesign", db_path=v1_db) as mem:
        stats = mem.get_stats()
        assert stats.schema_version == LATEST_VERSION
        assert stats.total == 4
        assert stats.by_session == {"website-redesign": 3, "weekly-reports": 1}
        hero = mem.recall("hero section colour palette")[0]
        assert hero.metadata == {"ticket": 42, "tags": ["design", "héro ✓"]}
        assert hero.created_at == datetime(2026, 4, 1, 9, tzinfo=timezone.utc)
        assert [m.content for m in mem.recall("design system", scope="global")] == [
            "Website uses the company design system v3."]
        # Still writable and searchable after the upgrade.
        new_id = mem.remember("written after the upgrade")
        assert mem.recall("upgrade")[0].id == new_id
    with sqlite3.connect(v1_db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        ops = [op for (op,) in conn.execute("SELECT op FROM audit_log ORDER BY seq")]
    assert ops.count("forget") == 1


@pytest.mark.parametrize(
    ("fixture", "total"), [("schema_v2.db", 7), ("schema_v3.db", 9), ("schema_v4.db", 14), ("schema_v5.db", 14),
                           ("schema_v6.db", 14), ("schema_v7.db", 14), ("schema_v8.db", 18),
                           ("schema_v9.db", 18), ("schema_v10.db", 18), ("schema_v11.db", 21)]
)
def test_later_schemas_open_every_time_and_lose_nothing(tmp_path: Path, fixture: str, total: int):
    # v2 and v3 were made by releases whose context windows could keep a forgotten
    # memory's words; schema_v3.db's release had also edited migration 2 after
    # schema_v2.db's. v4 and v5 hold a sleep's summary, merges and a shared memory;
    # v5's context windows reach across days of silence.
    db = tmp_path / "old.db"
    shutil.copyfile(FIXTURES / fixture, db)
    for _ in range(2):  # the second open checks the migrations it recorded
        with Mnemosyne(session_id="website-redesign", db_path=db, embedder=HashEmbedder()) as mem:
            stats = mem.get_stats()
            assert (stats.schema_version, stats.total) == (LATEST_VERSION, total)
            hero = mem.recall("hero section colour palette", explain=True)[0]
            assert hero.metadata == {"ticket": 42, "tags": ["design", "héro ✓"]}
            assert hero.access_count >= 1 and hero.explanation["dense"] > 0  # its vector came along
            assert mem.recall("what happened in April 2026", now="2026-05-01")  # by the new time index
            assert mem.recall("what happened in April 2026", now="2026-05-01", source="conversation")  # by source
            assert mem.doctor().ok
    with Mnemosyne(session_id="weekly-reports", db_path=db, embedder=HashEmbedder()) as other:
        # The forgotten memory's words are gone from every window: nothing is found by
        # them (the test embedder's vectors may still bring a nearest neighbour).
        found = other.recall("root password quokka zebra", explain=True)
        assert all(m.explanation["content"] == m.explanation["context"] == 0 for m in found)
        assert not any("quokka" in m.content for m in found)
        # What is written after the upgrade is indexed for words, once (doctor
        # compares the text index with the rows).
        other.remember("Retro moved to Thursday afternoon.")
        found = other.recall("retro thursday", explain=True)[0]
        assert found.content == "Retro moved to Thursday afternoon." and found.explanation["content"] > 0
        assert other.doctor().ok


def test_upgrade_keeps_a_safety_backup(v1_db: Path):
    if LATEST_VERSION == 1:
        pytest.skip("no migration after schema 1 yet")
    Mnemosyne(db_path=v1_db).close()
    backups = list(v1_db.parent.glob("old.db.pre-v*.bak"))
    assert len(backups) == 1
    with sqlite3.connect(backups[0]) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (1,)


def test_an_upgrade_that_fails_changes_nothing_and_leaves_no_copy_behind(v1_db: Path):
    # A table in the way of a later migration (as a read-only file, for a user
    # other than root, stops the commit): each attempt must not leave a full copy.
    with sqlite3.connect(v1_db) as conn:
        conn.execute("CREATE TABLE episodes (x)")
        before = conn.execute("SELECT id, content FROM memories ORDER BY id").fetchall()
    for _ in range(2):
        with pytest.raises(StorageError, match="episodes already exists"):
            Mnemosyne(db_path=v1_db)
    assert sorted(p.name for p in v1_db.parent.iterdir() if "pre-v" in p.name) == []
    with sqlite3.connect(v1_db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (1,)
        assert conn.execute("SELECT id, content FROM memories ORDER BY id").fetchall() == before


def test_an_upgrade_whose_safety_copy_does_not_fit_is_a_full_disk_and_changes_nothing(tmp_path: Path):
    # SQLite reports the file-size limit (EFBIG) writing the copy as a plain I/O error.
    db = tmp_path / "old.db"
    shutil.copyfile(FIXTURES / "schema_v8.db", db)
    with sqlite3.connect(db) as conn:
        before = conn.execute("SELECT id, content FROM memories ORDER BY id").fetchall()
    done = under_size_limit(db.stat().st_size // 2, """
        from mnemosyne import Mnemosyne, MnemosyneError
        try:
            Mnemosyne(db_path=sys.argv[1], embedder="none")
        except MnemosyneError as error:
            report(error)
    """, str(db))
    kind, message = done.stdout.splitlines()
    assert kind == "DiskFullError disk_full", done.stdout + done.stderr
    assert "copy the database aside before upgrading it" in message
    assert sorted(p.name for p in tmp_path.iterdir() if "pre-v" in p.name or p.name.startswith(".")) == []
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (8,)
        assert conn.execute("SELECT id, content FROM memories ORDER BY id").fetchall() == before


def test_an_upgrade_killed_while_copying_leaves_nothing_the_next_one_keeps(v1_db: Path):
    import subprocess
    import sys

    # Killed writing the copy's manifest, then naming the copy: what it left is the
    # name it held (a claim), perhaps a manifest, and temporary files.
    killed_mid_copy = (
        "import os, signal, sys\n"
        "import mnemosyne.storage.sqlite.backup_file as backup_file\n"
        "class Os:\n"
        "    replaced = 0\n"
        "    def __getattr__(self, name):\n"
        "        return getattr(os, name)\n"
        "    def replace(self, *args):\n"
        "        Os.replaced += 1\n"
        "        if Os.replaced == int(sys.argv[2]):\n"
        "            os.kill(os.getpid(), signal.SIGKILL)\n"
        "        os.replace(*args)\n"
        "backup_file.os = Os()\n"
        "from mnemosyne import Mnemosyne\n"
        "Mnemosyne(db_path=sys.argv[1])\n"
    )
    for killed_at in (1, 2):
        killed = subprocess.run([sys.executable, "-c", killed_mid_copy, str(v1_db), str(killed_at)], timeout=120)
        assert killed.returncode == -9
        # Each attempt first removes what the last one left.
        (held,) = v1_db.parent.glob("old.db.pre-v*.bak")
        assert held.read_bytes() == CLAIM
    with Mnemosyne(db_path=v1_db) as mem:
        assert mem.get_stats().total == 4
    (copy,) = v1_db.parent.glob("old.db.pre-v*.bak")
    assert sorted(p.name for p in v1_db.parent.iterdir() if "pre-v" in p.name) == [
        copy.name, copy.name + ".manifest.json"]


def test_copies_left_by_upgrades_killed_after_copying_do_not_pile_up(v1_db: Path):
    import fcntl
    import subprocess
    import sys

    from mnemosyne.dr.recovery import verify_backup
    from mnemosyne.storage.sqlite.backup_file import manifest_path

    # Killed applying the migrations, each time after its safety copy was made.
    killed_mid_upgrade = (
        "import os, signal, sys\n"
        "import mnemosyne.storage.sqlite.migrate as migrate\n"
        "migrate._apply = lambda conn, migration: os.kill(os.getpid(), signal.SIGKILL)\n"
        "from mnemosyne import Mnemosyne\n"
        "Mnemosyne(db_path=sys.argv[1])\n"
    )

    def copies() -> list[Path]:
        return sorted(v1_db.parent.glob("old.db.pre-v*.bak"))

    def killed_upgrade() -> None:
        killed = subprocess.run([sys.executable, "-c", killed_mid_upgrade, str(v1_db)], timeout=120)
        assert killed.returncode == -9

    killed_upgrade()
    (first,) = copies()
    first_bytes = first.read_bytes()
    # A copy a process holds locked is not taken from it, and one that differs from
    # the database keeps what only it holds.
    different = v1_db.with_name(f"old.db.pre-v{LATEST_VERSION}-20260101T000000.000000Z-1.bak")
    shutil.copyfile(FIXTURES / "schema_v2.db", different)
    shutil.copyfile(manifest_path(first), manifest_path(different))
    with open(first, "rb") as reading:
        fcntl.flock(reading, fcntl.LOCK_SH)
        killed_upgrade()
    assert first in copies() and len(copies()) == 3
    killed_upgrade()
    assert first not in copies() and len(copies()) == 2
    with Mnemosyne(db_path=v1_db) as mem:
        assert mem.get_stats().total == 4
    (kept,) = set(copies()) - {different}
    assert kept.read_bytes() == first_bytes
    assert different.read_bytes() == (FIXTURES / "schema_v2.db").read_bytes()
    assert sorted(p.name for p in v1_db.parent.iterdir() if "pre-v" in p.name) == sorted(
        name for copy in (kept, different) for name in (copy.name, manifest_path(copy).name))
    assert verify_backup(kept).schema_version == 1


def test_an_upgrade_keeps_the_copies_older_releases_made_without_a_manifest(tmp_path: Path):
    db = tmp_path / "m.db"
    shutil.copyfile(FIXTURES / "schema_v3.db", db)
    legacy = tmp_path / "m.db.pre-v3-20260301T101500.bak"  # as releases before manifests named them
    shutil.copyfile(FIXTURES / "schema_v2.db", legacy)
    Mnemosyne(db_path=db, embedder=HashEmbedder()).close()
    assert legacy.read_bytes() == (FIXTURES / "schema_v2.db").read_bytes()


def test_the_safety_backup_restores_like_any_backup(v1_db: Path, tmp_path: Path):
    from mnemosyne.dr.recovery import restore_backup, verify_backup

    if LATEST_VERSION == 1:
        pytest.skip("no migration after schema 1 yet")
    with sqlite3.connect(v1_db) as conn:
        v1_rows = conn.execute("SELECT id, content, metadata FROM memories ORDER BY id").fetchall()
    with Mnemosyne(session_id="website-redesign", db_path=v1_db) as mem:
        mem.remember("written after the upgrade")
    (safety,) = v1_db.parent.glob("old.db.pre-v*.bak")
    manifest = verify_backup(safety)
    assert manifest.schema_version == 1 and manifest.memory_count == 4
    restore_backup(backup_path=safety, db_path=v1_db)
    with sqlite3.connect(v1_db) as conn:
        assert conn.execute("SELECT id, content, metadata FROM memories ORDER BY id").fetchall() == v1_rows


def test_edited_migration_is_detected(v1_db: Path):
    Mnemosyne(db_path=v1_db).close()
    with sqlite3.connect(v1_db) as conn:
        conn.execute("UPDATE schema_migrations SET checksum = 'tampered' WHERE version = 1")
    with pytest.raises(StorageError, match="differs"):
        Mnemosyne(db_path=v1_db)


def test_concurrent_openers_migrate_once(v1_db: Path):
    import subprocess
    import sys

    code = "import sys\nfrom mnemosyne import Mnemosyne\nMnemosyne(db_path=sys.argv[1]).close()\n"
    procs = [subprocess.Popen([sys.executable, "-c", code, str(v1_db)]) for _ in range(4)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]
    with sqlite3.connect(v1_db) as conn:
        versions = [v for (v,) in conn.execute("SELECT version FROM schema_migrations ORDER BY version")]
    assert versions == list(range(1, LATEST_VERSION + 1))
    # The upgrade ran once, so the database was copied aside once.
    assert len(list(v1_db.parent.glob("old.db.pre-v*.bak"))) == 1


def test_what_an_older_release_still_running_stores_is_indexed_for_words(tmp_path: Path):
    db = tmp_path / "old.db"
    shutil.copyfile(FIXTURES / "schema_v4.db", db)

    def stored_by_an_older_release(text: str, seq: int) -> None:
        # As the previous release inserts: the row alone, its text left to a trigger
        # that the upgrade dropped.
        with sqlite3.connect(db) as conn:
            conn.execute(
                "INSERT INTO memories (seq, id, session_id, scope, kind, status, content, content_hash, source, "
                "importance, metadata, created_at, recorded_at, updated_at) VALUES "
                "(?, ?, 'weekly-reports', 'session', 'episodic', 'active', ?, ?, 'agent', 0.5, '{}', 1, 1, 1)",
                (seq, f"0190aaaa-0000-7000-8000-00000000{seq:04d}", text, content_hash(text)),
            )

    with Mnemosyne(session_id="weekly-reports", db_path=db, embedder=HashEmbedder()) as mem:  # upgrades
        # Not indexed yet, yet it can be edited and forgotten.
        for seq in (98, 99):
            stored_by_an_older_release(f"Memory {seq} of an older release.", seq)
        mem.update("0190aaaa-0000-7000-8000-000000000098", content="Edited since.")
        mem.forget("0190aaaa-0000-7000-8000-000000000099")
        assert word_index_ok(mem)  # the edit indexed its new text; nothing was taken out twice
        assert mem.recall("edited since", explain=True)[0].explanation["content"] > 0
        stored_by_an_older_release("The kumquat order arrives on Friday.", 100)
        assert not word_index_ok(mem)  # not indexed yet
        mem.sleep()  # idle time indexes it
        assert mem.recall("kumquat", explain=True)[0].explanation["content"] > 0
        stored_by_an_older_release("The rambutan order arrives on Monday.", 101)
    with Mnemosyne(session_id="weekly-reports", db_path=db, embedder=HashEmbedder()) as mem:  # so does opening
        assert mem.recall("rambutan", explain=True)[0].explanation["content"] > 0
        assert word_index_ok(mem)


def word_index_ok(mem: Mnemosyne) -> bool:
    (check,) = [c for c in mem.doctor().checks if c.name == "index:memories_fts"]
    return check.ok


def test_an_upgrade_keeps_the_index_the_previous_release_names(tmp_path: Path):
    # Processes of the previous release, still running during a rolling upgrade, read
    # a time's latest memories INDEXED BY it: without it their recall would fail.
    db = tmp_path / "old.db"
    shutil.copyfile(FIXTURES / "schema_v6.db", db)
    with Mnemosyne(session_id="website-redesign", db_path=db, embedder=HashEmbedder()) as mem:
        assert mem.get_stats().schema_version == LATEST_VERSION
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT seq FROM memories INDEXED BY memories_by_time ORDER BY created_at DESC LIMIT 1")
        assert rows.fetchone() is not None


def test_an_upgrade_indexes_each_sources_memories_by_time(tmp_path: Path):
    # A source's latest memories (a query naming only it) are read down these, in
    # walks over what the viewer may see, as a span's are down the time indexes.
    db = tmp_path / "old.db"
    shutil.copyfile(FIXTURES / "schema_v7.db", db)
    Mnemosyne(session_id="website-redesign", db_path=db, embedder=HashEmbedder()).close()
    with sqlite3.connect(db) as conn:
        columns = {index: [row[2] for row in conn.execute(f"PRAGMA index_info({index})")]
                   for index in ("memories_by_source_session_time", "memories_by_source_scope_time")}
    assert columns == {"memories_by_source_session_time": ["source", "session_id", "created_at"],
                       "memories_by_source_scope_time": ["source", "scope", "created_at"]}


def test_an_upgrade_indexes_memories_by_importance(tmp_path: Path):
    # A listing of a span reads its most important memories down these, in the same
    # walks, however many memories the span holds.
    db = tmp_path / "old.db"
    shutil.copyfile(FIXTURES / "schema_v10.db", db)
    with Mnemosyne(session_id="website-redesign", db_path=db, embedder=HashEmbedder()) as mem:
        assert mem.get_stats().schema_version == LATEST_VERSION
        assert mem.recall("what happened in April 2026", now="2026-05-01")
    with sqlite3.connect(db) as conn:
        columns = {index: [row[2] for row in conn.execute(f"PRAGMA index_info({index})")]
                   for index in ("memories_by_session_importance", "memories_by_scope_importance")}
    assert columns == {
        "memories_by_session_importance": ["session_id", "status", "importance", "created_at", "source"],
        "memories_by_scope_importance": ["scope", "status", "importance", "created_at", "source"],
    }


def test_an_upgrade_cuts_the_windows_around_a_long_memory_to_its_opening(tmp_path: Path):
    # Schema 11 put a pasted 14,000-character contract whole into its own and its
    # neighbours' windows.
    db = tmp_path / "old.db"
    shutil.copyfile(FIXTURES / "schema_v11.db", db)
    with Mnemosyne(session_id="vendor-review", db_path=db, embedder=HashEmbedder()) as mem:
        assert mem.recall("Orbital Freight in Rotterdam")[0].content.startswith("Pasted contract")  # by its own text
        assert mem.doctor().ok
    with sqlite3.connect(db) as conn:
        in_windows = conn.execute("SELECT count(*) FROM memories_context_fts WHERE memories_context_fts MATCH ?",
                                  ("Rotterdam",)).fetchone()[0]
    assert in_windows == 0  # the contract's last words lie past the opening a window holds


def test_a_schema_8_database_upgrades_and_its_cjk_and_emoji_memories_are_found_by_their_words(tmp_path: Path):
    # Schema 8 indexed a run of CJK as one word and dropped emoji: none of these was
    # found by its words.
    db = tmp_path / "old.db"
    shutil.copyfile(FIXTURES / "schema_v8.db", db)
    with Mnemosyne(session_id="tokyo-office", db_path=db, embedder=HashEmbedder()) as mem:
        for query, memory in [("东京", "我住在东京，每天坐地铁上班。"), ("天気", "東京の天気は晴れです。"),
                              ("🚀", "The deploy 🚀 went out."), ("预算", "预算会议改到周五下午。")]:
            found = mem.recall(query, explain=True)[0]
            assert found.content == memory and found.explanation["content"] > 0
            assert found.explanation["context"] > 0  # its window was rewritten too
        assert mem.doctor().ok
    with Mnemosyne(session_id="website-redesign", db_path=db, embedder=HashEmbedder()) as other:
        found = other.recall("周五", explain=True)[0]  # a global memory of another session
        assert found.content == "预算会议改到周五下午。" and found.explanation["content"] > 0


def stored_by_the_previous_release(db: Path, text: str, seq: int, hour: int) -> str:
    """Store ``text`` as a process of schema 8 does: the row, its text in the word
    index as it stands, its context window (far from others: itself) as text, and
    its audit record."""
    memory_id = f"0190bbbb-0000-7000-8000-00000000{seq:04d}"
    at = datetime(2026, 5, 1, hour, tzinfo=timezone.utc).timestamp()
    with sqlite3.connect(db) as conn:
        conn.execute(
            "INSERT INTO memories (seq, id, session_id, scope, kind, status, content, content_hash, source, "
            "importance, metadata, created_at, recorded_at, updated_at) VALUES "
            "(?, ?, 'tokyo-office', 'session', 'episodic', 'active', ?, ?, 'agent', 0.5, '{}', ?, ?, ?)",
            (seq, memory_id, text, content_hash(text), at, at, at),
        )
        conn.execute("INSERT INTO memories_fts (rowid, content) VALUES (?, ?)", (seq, text))
        conn.execute("INSERT INTO memories_context_fts (rowid, context) VALUES (?, ?)", (seq, text))
        conn.execute("INSERT INTO audit_log (at, op, memory_id, session_id) VALUES (?, 'remember', ?, 'tokyo-office')",
                     (at, memory_id))
    return memory_id


def found_by_words(mem: Mnemosyne, query: str) -> list[str]:
    return [m.content for m in mem.recall(query, explain=True) if m.explanation["content"] > 0]


def test_what_the_previous_release_writes_during_a_rolling_upgrade_is_found_by_its_cjk_words(tmp_path: Path):
    db = tmp_path / "old.db"
    shutil.copyfile(FIXTURES / "schema_v8.db", db)
    with Mnemosyne(session_id="tokyo-office", db_path=db, embedder=HashEmbedder()) as mem:  # upgrades
        stored_by_the_previous_release(db, "会议室的投影仪坏了。", 90, hour=1)
        assert not found_by_words(mem, "投影仪")  # not in this release's form yet
        mem.remember("我明天去京都出差。")  # stored after it: the watermark passes it by
        mem.sleep()  # idle time brings it level
        assert found_by_words(mem, "投影仪") == ["会议室的投影仪坏了。"]
        assert mem.doctor().ok
        stored_by_the_previous_release(db, "用户喜欢喝绿茶🍵。", 100, hour=3)
        edited = stored_by_the_previous_release(db, "打印机也坏了。", 101, hour=5)
        with sqlite3.connect(db) as conn:  # the previous release edits one and forgets another
            conn.execute("UPDATE memories SET content = '打印机修好了。' WHERE id = ?", (edited,))
            conn.execute("DELETE FROM memories WHERE seq = 90")
            conn.execute("INSERT INTO audit_log (at, op, memory_id, session_id) "
                         "VALUES (0, 'forget', '0190bbbb-0000-7000-8000-000000000090', 'tokyo-office')")
        assert not found_by_words(mem, "投影仪")  # gone from every index at once
    with Mnemosyne(session_id="tokyo-office", db_path=db, embedder=HashEmbedder()) as mem:  # so does opening
        assert found_by_words(mem, "绿茶") == found_by_words(mem, "🍵") == ["用户喜欢喝绿茶🍵。"]
        assert found_by_words(mem, "修好") == ["打印机修好了。"] and not found_by_words(mem, "也坏")
        assert mem.doctor().ok
