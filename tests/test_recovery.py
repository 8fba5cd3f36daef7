"""Backups and restores (``mnemosyne.dr.recovery``) against real SQLite files.

A backup is a SQLite file plus ``<backup>.manifest.json``; a restore must refuse
anything that is not a verified backup before it touches the target database.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from mnemosyne import BackupError, InvalidInputError, Mnemosyne, MnemosyneError, NotADatabaseError
from mnemosyne.dr.recovery import create_backup, manifest_path, restore_backup, verify_backup
from mnemosyne.storage.sqlite.snapshot import CLAIM
from size_limit import fill, tiny_disk, under_size_limit

pytestmark = pytest.mark.usefixtures("lexical_only")  # storage, not ranking: no model


# -- helpers --------------------------------------------------------------------------


def sha256(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


def rows(db: Path) -> list[tuple]:
    """Every memory row (id, session, scope, content, metadata), read with plain sqlite3."""
    conn = sqlite3.connect(db)
    try:
        return conn.execute(
            "SELECT id, session_id, scope, content, metadata FROM memories ORDER BY id"
        ).fetchall()
    finally:
        conn.close()


def fts_integrity_ok(db: Path) -> None:
    """Raise if the full-text index disagrees with the memories table."""
    conn = sqlite3.connect(db)
    try:
        conn.execute("INSERT INTO memories_fts (memories_fts) VALUES ('integrity-check')")
    finally:
        conn.close()


def seed(db: Path, count: int = 5, session: str = "s1") -> list[str]:
    with Mnemosyne(session_id=session, db_path=db, dedupe_window=0) as mem:  # re-seeding adds again
        return [
            mem.remember(f"seeded fact number {i} about kestrels", scope="global", metadata={"i": i})
            for i in range(count)
        ]


def copy_backup(src: Path, dest: Path, *, with_manifest: bool = True) -> Path:
    shutil.copyfile(src, dest)
    if with_manifest:
        shutil.copyfile(manifest_path(src), manifest_path(dest))
    return dest


def forge_manifest(bad: Path, template: Path) -> None:
    """Give ``bad`` a manifest whose checksum matches it, so only content checks remain."""
    manifest = json.loads(manifest_path(template).read_text(encoding="utf-8"))
    data = bad.read_bytes()
    manifest.update(sha256=hashlib.sha256(data).hexdigest(), size_bytes=len(data))
    manifest_path(bad).write_text(json.dumps(manifest), encoding="utf-8")


# -- backups while another process writes ----------------------------------------------

WRITER = textwrap.dedent(
    """
    import pathlib, sys
    from mnemosyne import Mnemosyne

    db, stop = sys.argv[1], pathlib.Path(sys.argv[2])
    written = 0
    with Mnemosyne(session_id="writer", db_path=db) as mem:
        while not (stop.exists() and written >= 20):
            mem.remember(
                f"heartbeat entry{written} from the writer process",
                scope="global", metadata={"seq": written},
            )
            written += 1
            if written == 1:
                print("started", flush=True)
    print(written, flush=True)
    """
)


def count_memories(db: Path) -> int:
    conn = sqlite3.connect(db, timeout=10)
    try:
        return conn.execute("SELECT count(*) FROM memories").fetchone()[0]
    finally:
        conn.close()


def test_backups_taken_while_another_process_writes_are_consistent_and_restorable(tmp_path: Path) -> None:
    db = tmp_path / "live.db"
    stop = tmp_path / "stop"
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(db), str(stop)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    manifests = []
    try:
        assert writer.stdout is not None
        assert writer.stdout.readline().strip() == "started"
        for k in range(4):
            manifests.append(create_backup(db_path=db, backup_path=tmp_path / "backups" / f"b{k}.bak"))
            # Let the writer get visibly further before the next backup.
            deadline = time.monotonic() + 20
            while count_memories(db) <= manifests[-1].memory_count and time.monotonic() < deadline:
                time.sleep(0.01)
    finally:
        stop.touch()
        out, err = writer.communicate(timeout=60)
    assert writer.returncode == 0, err
    assert "Traceback" not in err and err == ""
    written = int(out.split()[-1])

    counts = [m.memory_count for m in manifests]
    assert counts == sorted(counts) and counts[0] < counts[-1] <= written, counts

    for k, manifest in enumerate(manifests):
        backup = tmp_path / "backups" / f"b{k}.bak"
        assert verify_backup(backup) == manifest
        restored = tmp_path / "restored" / str(k) / "memories.db"
        assert restore_backup(backup_path=backup, db_path=restored) == manifest

        stored = rows(restored)
        assert len(stored) == manifest.memory_count
        # One consistent snapshot: exactly the first n writes, no gaps, no torn rows.
        assert sorted(json.loads(r[4])["seq"] for r in stored) == list(range(manifest.memory_count))
        fts_integrity_ok(restored)

        last = manifest.memory_count - 1
        with Mnemosyne(session_id="reader", db_path=restored) as mem:
            assert mem.get_stats().total == manifest.memory_count
            expected = f"heartbeat entry{last} from the writer process"
            hits = [h.content for h in mem.recall(f"entry{last}", top_k=5)]
            assert hits[0] == expected and hits.count(expected) == 1
            assert len(mem.recall("heartbeat writer", top_k=3)) == min(3, manifest.memory_count)


# -- paths -------------------------------------------------------------------------------


@pytest.mark.parametrize("as_path", [str, Path], ids=["str", "Path"])
def test_str_and_path_work_and_missing_folders_are_created(tmp_path: Path, as_path) -> None:
    db = tmp_path / "memories.db"
    ids = seed(db)
    backup = tmp_path / "new" / "nested" / "folder" / "weekly.bak"
    target = tmp_path / "other" / "deep" / "restored.db"

    manifest = create_backup(db_path=as_path(db), backup_path=as_path(backup))
    assert backup.is_file() and manifest_path(backup).is_file()
    assert manifest.memory_count == len(ids)
    assert verify_backup(as_path(backup)) == manifest

    assert restore_backup(backup_path=as_path(backup), db_path=as_path(target)) == manifest
    assert rows(target) == rows(db)
    with Mnemosyne(session_id="anyone", db_path=target) as mem:
        expected = [f"seeded fact number {i} about kestrels" for i in range(5)]
        assert [mem.get(i).content for i in ids] == expected


def test_manifest_describes_the_backup(db_path: Path, tmp_path: Path) -> None:
    seed(db_path, count=3)
    backup = tmp_path / "b.bak"
    manifest = create_backup(db_path=db_path, backup_path=backup)
    on_disk = json.loads(manifest_path(backup).read_text(encoding="utf-8"))
    assert on_disk["sha256"] == sha256(backup)
    assert on_disk["size_bytes"] == backup.stat().st_size
    assert on_disk["memory_count"] == manifest.memory_count == 3
    assert on_disk["counts_by_status"] == {"active": 3}
    assert on_disk["schema_version"] >= 1


def test_backup_of_a_missing_database_or_onto_itself_is_refused(tmp_path: Path, db_path: Path) -> None:
    with pytest.raises(BackupError):
        create_backup(db_path=tmp_path / "absent.db", backup_path=tmp_path / "b.bak")
    assert not (tmp_path / "b.bak").exists()
    seed(db_path, count=1)
    with pytest.raises(InvalidInputError):
        create_backup(db_path=db_path, backup_path=db_path)
    with pytest.raises(BackupError):
        verify_backup(tmp_path / "absent.bak")
    for folder in (f"{tmp_path}/backups/", f"{tmp_path}/backups/."):  # one that does not exist yet
        with pytest.raises(InvalidInputError, match="names a folder"):
            create_backup(db_path=db_path, backup_path=folder)
    assert not (tmp_path / "backups").exists()


def test_a_backup_never_replaces_a_file(db_path: Path, tmp_path: Path) -> None:
    seed(db_path, count=2)
    backup = tmp_path / "b.bak"
    first = create_backup(db_path=db_path, backup_path=backup)
    seed(db_path, count=3)
    with pytest.raises(InvalidInputError, match="already exists"):
        create_backup(db_path=db_path, backup_path=backup)
    assert verify_backup(backup) == first
    # Nor another backup's manifest, as a backup of its own or as the new one's manifest.
    with pytest.raises(InvalidInputError, match="manifest"):
        create_backup(db_path=db_path, backup_path=manifest_path(backup))
    squatter = tmp_path / "c.bak.manifest.json"
    squatter.write_text("someone else's file", encoding="utf-8")
    with pytest.raises(InvalidInputError, match="already exists"):
        create_backup(db_path=db_path, backup_path=tmp_path / "c.bak")
    assert squatter.read_text(encoding="utf-8") == "someone else's file"
    assert not (tmp_path / "c.bak").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


@pytest.mark.parametrize("suffix", ["-wal", "-shm", "-journal"])
def test_a_backup_onto_the_databases_own_files_is_refused(db_path: Path, suffix: str) -> None:
    with Mnemosyne(session_id="s", db_path=db_path) as live:  # open: -wal and -shm exist
        live.remember("kept while the backup is refused")
        own = db_path.with_name(db_path.name + suffix)
        before = sha256(own)
        with pytest.raises(InvalidInputError, match="own files"):
            create_backup(db_path=db_path, backup_path=own)
        assert sha256(own) == before
        assert live.get_stats().total == 1


def test_backing_up_an_old_schema_leaves_it_as_it_is(tmp_path: Path) -> None:
    from mnemosyne.storage.sqlite.migrations import LATEST_VERSION

    old = tmp_path / "old.db"
    shutil.copyfile(Path(__file__).parent / "fixtures" / "schema_v1.db", old)
    before = sha256(old)
    manifest = create_backup(db_path=old, backup_path=tmp_path / "old.bak")
    assert sha256(old) == before
    assert manifest.schema_version == 1 and manifest.memory_count == 4
    assert not list(tmp_path.glob("old.db.pre-v*"))
    # It is upgraded when restored.
    restored = tmp_path / "restored.db"
    restore_backup(backup_path=tmp_path / "old.bak", db_path=restored)
    with Mnemosyne(session_id="website-redesign", db_path=restored) as mem:
        assert mem.get_stats().schema_version == LATEST_VERSION
        assert mem.get_stats().total == 4


@pytest.mark.parametrize("user_version", [0, 3, 12])  # an application's own schema number, if any
def test_another_applications_database_is_not_backed_up_restored_over_or_changed(
    db_path: Path, tmp_path: Path, user_version: int
) -> None:
    foreign = tmp_path / "app.sqlite"
    conn = sqlite3.connect(foreign)
    conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
    conn.execute("INSERT INTO invoices (total) VALUES (12.5)")
    conn.execute(f"PRAGMA user_version = {user_version}")
    conn.commit()
    conn.close()
    before = sha256(foreign)
    with pytest.raises(NotADatabaseError, match="another application") as raised:
        create_backup(db_path=foreign, backup_path=tmp_path / "app.bak")
    assert raised.value.path == str(foreign)
    with Mnemosyne(db_path=db_path, embedder="none") as mem:
        mem.remember("ours")
    create_backup(db_path=db_path, backup_path=tmp_path / "ours.bak")
    with pytest.raises(NotADatabaseError, match="another application"):
        restore_backup(backup_path=tmp_path / "ours.bak", db_path=foreign)
    assert sha256(foreign) == before
    assert not list(tmp_path.glob("app.sqlite?*")) and not list(tmp_path.glob(".app.sqlite*"))


# -- restoring over a database in use ---------------------------------------------------


def test_restore_over_an_open_database_keeps_a_safety_copy_and_is_seen_live(
    db_path: Path, tmp_path: Path
) -> None:
    live = Mnemosyne(session_id="s1", db_path=db_path)
    try:
        kept = live.remember("the harbour pilot boards at dawn", scope="global")
        doomed = live.remember("the lighthouse keeper retires in spring", scope="global")
        backup = tmp_path / "before-changes.bak"
        create_backup(db_path=db_path, backup_path=backup)

        later = live.remember("a storm surge warning was issued", scope="global")
        live.forget(doomed)
        before_restore = rows(db_path)

        restore_backup(backup_path=backup, db_path=db_path)

        # The instance opened before the restore sees the restored contents.
        assert live.get(doomed) is not None
        assert live.get(later) is None
        assert live.recall("lighthouse keeper")[0].id == doomed
        assert later not in {m.id for m in live.recall("storm surge warning")}
        assert {m.id for m in live.recall("harbour pilot lighthouse")} == {kept, doomed}
        assert live.get_stats().total == 2
        # ... and can keep writing.
        assert live.get(live.remember("after the restore", scope="global")) is not None
    finally:
        live.close()

    safety = sorted(tmp_path.glob("memories.db.pre-restore-*.bak"))
    assert len(safety) == 1
    assert verify_backup(safety[0]).memory_count == 2
    assert rows(safety[0]) == before_restore  # the replaced state, including `later`

    conn = sqlite3.connect(db_path)
    try:
        restores = conn.execute("SELECT detail FROM audit_log WHERE op = 'restore'").fetchall()
    finally:
        conn.close()
    assert len(restores) == 1 and json.loads(restores[0][0])["backup"] == str(backup)
    fts_integrity_ok(db_path)


def test_an_old_schema_backup_goes_live_already_upgraded(db_path: Path, tmp_path: Path) -> None:
    from mnemosyne.storage.sqlite.migrations import LATEST_VERSION

    old = tmp_path / "v4.db"  # made by a release whose text index was kept by a trigger
    shutil.copyfile(Path(__file__).parent / "fixtures" / "schema_v4.db", old)
    create_backup(db_path=old, backup_path=tmp_path / "v4.bak")
    with Mnemosyne(session_id="website-redesign", db_path=db_path) as live:
        live.remember("written before the restore")

        restore_backup(backup_path=tmp_path / "v4.bak", db_path=db_path)

        with sqlite3.connect(db_path) as conn:
            assert conn.execute("PRAGMA user_version").fetchone() == (LATEST_VERSION,)
        # An agent that had the database open writes into the schema it expects.
        fresh = live.remember("written after the restore")
        assert [m.id for m in live.recall("written after the restore")][:1] == [fresh]
        assert live.doctor().ok
    assert not list(tmp_path.glob("*.pre-v*")) and not list(tmp_path.glob(".*.tmp"))  # no copies of the copy


def test_a_restore_loses_no_write_that_other_processes_commit_meanwhile(db_path: Path, tmp_path: Path) -> None:
    seed(db_path, count=3)
    create_backup(db_path=db_path, backup_path=tmp_path / "b.bak")
    writer = textwrap.dedent("""
        import os, sys
        from mnemosyne import Mnemosyne
        db, log, stop = sys.argv[1:]
        with Mnemosyne(session_id="writer", db_path=db, embedder="none") as mem, open(log, "w") as out:
            while not os.path.exists(stop):
                print(mem.remember("a write while the restore runs"), file=out, flush=True)
    """)
    stop = tmp_path / "stop"
    logs = [tmp_path / f"writer-{i}.log" for i in range(2)]
    procs = [subprocess.Popen([sys.executable, "-c", writer, str(db_path), str(log), str(stop)]) for log in logs]
    try:
        while not all(log.exists() and log.stat().st_size > 0 for log in logs):
            assert all(p.poll() is None for p in procs), "a writer died"
            time.sleep(0.05)  # both are writing
        restore_backup(backup_path=tmp_path / "b.bak", db_path=db_path)
        time.sleep(0.5)
    finally:
        stop.touch()
        assert [p.wait(timeout=60) for p in procs] == [0, 0]
    (safety,) = tmp_path.glob("memories.db.pre-restore-*.bak")
    kept = {row[0] for row in rows(db_path)} | {row[0] for row in rows(safety)}
    acknowledged = [line for log in logs for line in log.read_text().split()]
    assert acknowledged and [i for i in acknowledged if i not in kept] == []


def test_nothing_commits_between_the_safety_copy_and_the_overwrite(
    db_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mnemosyne.dr import recovery

    seed(db_path, count=3)
    create_backup(db_path=db_path, backup_path=tmp_path / "b.bak")
    refused: list[str] = []
    save = recovery._snapshot

    def save_then_write(source: Path, target: Path):  # another writer, right after the copy
        manifest = save(source, target)
        other = sqlite3.connect(db_path, timeout=0)
        try:
            other.execute("INSERT INTO meta (key, value) VALUES ('written', 'in between')")
        except sqlite3.OperationalError as exc:
            refused.append(str(exc))
        finally:
            other.close()
        return manifest

    monkeypatch.setattr(recovery, "_snapshot", save_then_write)
    restore_backup(backup_path=tmp_path / "b.bak", db_path=db_path)
    assert refused == ["database is locked"]


def test_a_restore_interrupted_while_copying_changes_nothing(
    db_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mnemosyne.dr import recovery

    seed(db_path, count=3)
    create_backup(db_path=db_path, backup_path=tmp_path / "b.bak")
    with Mnemosyne(session_id="s1", db_path=db_path) as live:
        live.remember("the state a Ctrl-C must leave")
    before = rows(db_path)
    save = recovery._snapshot

    def then_interrupt(source: Path, target: Path):  # Ctrl-C as the page copy begins
        save(source, target)
        raise KeyboardInterrupt

    monkeypatch.setattr(recovery, "_snapshot", then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        restore_backup(backup_path=tmp_path / "b.bak", db_path=db_path)
    assert rows(db_path) == before
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("SELECT count(*) FROM audit_log WHERE op = 'restore'").fetchone() == (0,)
    assert not list(tmp_path.glob(".*.tmp"))
    assert not list(tmp_path.glob("*.pre-restore-*"))  # nor a copy of a database it did not change


def test_a_restore_interrupted_after_it_went_live_reports_it_restored(
    db_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mnemosyne.storage.sqlite import snapshot

    seed(db_path, count=3)
    create_backup(db_path=db_path, backup_path=tmp_path / "b.bak")
    restored = rows(db_path)
    with Mnemosyne(session_id="s1", db_path=db_path) as live:
        live.remember("written after the backup")
    remove = snapshot._remove

    def interrupted(path: Path) -> None:  # Ctrl-C while the staged copy is removed
        remove(path)
        if path.name.startswith(f".{db_path.name}.mnemosyne-"):  # the stage, not the safety copy's
            raise KeyboardInterrupt

    monkeypatch.setattr(snapshot, "_remove", interrupted)
    manifest = restore_backup(backup_path=tmp_path / "b.bak", db_path=db_path)
    assert manifest.memory_count == 3 and rows(db_path) == restored


def test_a_restore_removes_copies_killed_restores_left_and_no_other(db_path: Path, tmp_path: Path) -> None:
    seed(db_path, count=2)
    create_backup(db_path=db_path, backup_path=tmp_path / "b.bak")
    left = db_path.with_name(f".{db_path.name}.restore-123-dead.tmp")  # nothing holds it
    in_use = db_path.with_name(f".{db_path.name}.restore-456-live.tmp")
    for stage in (left, in_use):
        shutil.copyfile(tmp_path / "b.bak", stage)
        stage.with_name(stage.name + "-wal").write_bytes(b"restored pages")
    holder = subprocess.Popen(  # a restore under way elsewhere, in another container say
        [sys.executable, "-c", "import fcntl, os, sys, time\n"
         "fd = os.open(sys.argv[1], os.O_RDWR); fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True)\n"
         "time.sleep(60)", str(in_use)],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        restore_backup(backup_path=tmp_path / "b.bak", db_path=db_path)
    finally:
        holder.kill()
        holder.wait()
    assert not left.exists() and not left.with_name(left.name + "-wal").exists()
    assert in_use.exists() and in_use.with_name(in_use.name + "-wal").exists()
    assert sorted(p.name for p in tmp_path.glob(".*.tmp*")) == sorted([in_use.name, in_use.name + "-wal"])


def test_restore_invalidates_the_live_vector_index(db_path: Path, tmp_path: Path) -> None:
    testing = pytest.importorskip("mnemosyne.testing")
    live = Mnemosyne(session_id="s", db_path=db_path, embedder=testing.HashEmbedder())
    try:
        live.remember("alpha apples orchard", scope="global")
        create_backup(db_path=db_path, backup_path=tmp_path / "b.bak")
        live.remember("zebra xylophone", scope="global")
        live.recall("zebra xylophone")  # the live index now holds the zebra vector
        restore_backup(backup_path=tmp_path / "b.bak", db_path=db_path)
        mouse = live.remember("quiet mouse", scope="global")  # takes the dropped row's seq

        live_hits = {m.id: m.explanation["dense"] for m in live.recall("quiet mouse", explain=True)}
        assert live.recall("zebra xylophone") == []  # nothing left mentions zebras
        assert live_hits[mouse] == 1.0  # its own vector, not the zebra's
    finally:
        live.close()


def test_restored_database_reopens_with_the_backed_up_memories(db_path: Path, tmp_path: Path) -> None:
    ids = seed(db_path, count=4)
    backup = tmp_path / "b.bak"
    create_backup(db_path=db_path, backup_path=backup)
    with Mnemosyne(session_id="s1", db_path=db_path) as mem:
        for memory_id in ids:
            mem.forget(memory_id)
    restore_backup(backup_path=backup, db_path=db_path)
    with Mnemosyne(session_id="s2", db_path=db_path) as mem:
        assert sorted(m.id for m in mem.recall("kestrels", top_k=10)) == sorted(ids)


# -- refusing bad backups ---------------------------------------------------------------


def corrupt(good: Path, work: Path) -> Path:
    bad = copy_backup(good, work / "corrupt.bak")
    data = bytearray(bad.read_bytes())
    middle = len(data) // 2
    data[middle:middle + 64] = bytes(b ^ 0xFF for b in data[middle:middle + 64])
    bad.write_bytes(bytes(data))
    return bad


def truncated(good: Path, work: Path) -> Path:
    bad = copy_backup(good, work / "truncated.bak")
    data = bad.read_bytes()
    bad.write_bytes(data[: len(data) // 2])
    return bad


def truncated_with_matching_manifest(good: Path, work: Path) -> Path:
    bad = truncated(good, work)
    forge_manifest(bad, good)
    return bad


def random_bytes(good: Path, work: Path) -> Path:
    bad = work / "random.bak"
    bad.write_bytes(os.urandom(64 * 1024))
    forge_manifest(bad, good)
    return bad


def text_file(good: Path, work: Path) -> Path:
    bad = work / "notes.txt"
    bad.write_text("these are my notes, not a database\n" * 200, encoding="utf-8")
    return bad


def text_file_with_matching_manifest(good: Path, work: Path) -> Path:
    bad = text_file(good, work)
    forge_manifest(bad, good)
    return bad


def without_manifest(good: Path, work: Path) -> Path:
    return copy_backup(good, work / "lonely.bak", with_manifest=False)


def manifest_of_another_backup(good: Path, work: Path) -> Path:
    bad = copy_backup(good, work / "mismatched.bak", with_manifest=False)
    other = work / "other.bak"
    seed(work / "source.db", count=1)  # so the other backup differs
    create_backup(db_path=work / "source.db", backup_path=other)
    shutil.copyfile(manifest_path(other), manifest_path(bad))
    return bad


def unreadable_manifest(good: Path, work: Path) -> Path:
    bad = copy_backup(good, work / "garbled.bak", with_manifest=False)
    manifest_path(bad).write_text("{not json", encoding="utf-8")
    return bad


def manifest_with_wrong_types(good: Path, work: Path) -> Path:
    bad = copy_backup(good, work / "edited.bak", with_manifest=False)
    fields = json.loads(manifest_path(good).read_text(encoding="utf-8"))
    manifest_path(bad).write_text(json.dumps({**fields, "sha256": None, "schema_version": "5"}), encoding="utf-8")
    return bad


def manifest_nested_deep(good: Path, work: Path) -> Path:
    bad = copy_backup(good, work / "nested.bak", with_manifest=False)
    manifest_path(bad).write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    return bad


BAD_BACKUPS = [
    corrupt, truncated, truncated_with_matching_manifest, random_bytes, text_file,
    text_file_with_matching_manifest, without_manifest, manifest_of_another_backup, unreadable_manifest,
    manifest_with_wrong_types, manifest_nested_deep,
]


@pytest.mark.parametrize("make_bad", BAD_BACKUPS, ids=[f.__name__ for f in BAD_BACKUPS])
def test_a_bad_backup_is_refused_and_the_target_is_untouched(tmp_path: Path, make_bad) -> None:
    source = tmp_path / "source.db"
    seed(source, count=30)
    good = tmp_path / "good.bak"
    create_backup(db_path=source, backup_path=good)
    bad = make_bad(good, tmp_path)

    target = tmp_path / "target.db"
    wal = target.with_name(target.name + "-wal")
    live = Mnemosyne(session_id="t", db_path=target)
    try:
        ids = [live.remember(f"target memory {i}") for i in range(10)]
        assert wal.is_file()  # the open instance keeps recent writes in the WAL
        before = (sha256(target), sha256(wal))
        bad_bytes = sha256(bad)

        with pytest.raises(BackupError):
            verify_backup(bad)
        with pytest.raises(BackupError) as raised:
            restore_backup(backup_path=bad, db_path=target)
        assert isinstance(raised.value, MnemosyneError)

        assert (sha256(target), sha256(wal)) == before
        assert sha256(bad) == bad_bytes  # checking never modifies the backup either
        assert [p.name for p in tmp_path.glob("target.db.*")] == []  # no safety copy, nothing moved
        assert [p.name for p in tmp_path.glob(".target.db*")] == []  # no staged leftovers
        assert [m.content for m in map(live.get, ids)] == [f"target memory {i}" for i in range(10)]
    finally:
        live.close()
    with Mnemosyne(session_id="t", db_path=target) as mem:
        assert mem.get_stats().total == 10
        assert [m.id for m in map(mem.get, ids)] == ids


# -- restoring over a broken target -----------------------------------------------------


def test_restore_over_an_unreadable_target_moves_the_old_files_aside(tmp_path: Path) -> None:
    source = tmp_path / "source.db"
    ids = seed(source, count=3)
    backup = tmp_path / "good.bak"
    create_backup(db_path=source, backup_path=backup)

    target = tmp_path / "broken" / "memories.db"
    target.parent.mkdir()
    garbage, stale_wal = os.urandom(8192), os.urandom(4096)
    target.write_bytes(garbage)
    target.with_name("memories.db-wal").write_bytes(stale_wal)
    with pytest.raises(MnemosyneError):
        Mnemosyne(db_path=target)

    restore_backup(backup_path=backup, db_path=target)

    aside = {p.name: p.read_bytes() for p in target.parent.iterdir() if ".unreadable-" in p.name}
    old_wal = [name for name in aside if name.endswith("-wal")]
    old_db = [name for name in aside if not name.endswith("-wal")]
    assert len(old_db) == len(old_wal) == 1, sorted(aside)
    assert aside[old_db[0]] == garbage and aside[old_wal[0]] == stale_wal

    assert rows(target) == rows(source)
    fts_integrity_ok(target)
    with Mnemosyne(session_id="s1", db_path=target) as mem:
        assert sorted(m.id for m in mem.recall("kestrels")) == sorted(ids)


def symlinked_database(tmp_path: Path) -> tuple[Path, Path]:
    """``app/memories.db``, a symlink to ``data/real.db`` (not made yet)."""
    (tmp_path / "app").mkdir()
    (tmp_path / "data").mkdir()
    link, real = tmp_path / "app" / "memories.db", tmp_path / "data" / "real.db"
    link.symlink_to(real)
    return link, real


def test_restore_through_a_symlink_replaces_the_unreadable_file_it_points_at(tmp_path: Path) -> None:
    link, real = symlinked_database(tmp_path)
    ids = seed(link, count=3)
    backup = tmp_path / "good.bak"
    create_backup(db_path=link, backup_path=backup)
    garbage, stale_wal = os.urandom(8192), os.urandom(4096)
    real.write_bytes(garbage)
    real.with_name("real.db-wal").write_bytes(stale_wal)

    restore_backup(backup_path=backup, db_path=link)

    assert link.is_symlink() and link.resolve() == real  # the link stays a link
    assert sorted(p.name for p in link.parent.iterdir()) == ["memories.db"]
    aside = {p.name: p.read_bytes() for p in real.parent.iterdir() if ".unreadable-" in p.name}
    assert sorted(aside.values()) == sorted([garbage, stale_wal]), sorted(aside)
    assert all(name.startswith("real.db.unreadable-") for name in aside)
    assert not real.with_name("real.db-wal").exists()  # never replayed into the restored file
    assert rows(real) == rows(backup)  # what opening the real path reads
    with Mnemosyne(session_id="s1", db_path=real) as mem:
        assert sorted(m.id for m in mem.recall("kestrels")) == sorted(ids)


def test_restore_through_a_symlink_into_a_healthy_database_saves_it_beside_the_file(tmp_path: Path) -> None:
    link, real = symlinked_database(tmp_path)
    seed(link, count=2)
    backup = tmp_path / "b.bak"
    create_backup(db_path=link, backup_path=backup)
    with Mnemosyne(session_id="s1", db_path=real) as mem:
        later = mem.remember("written after the backup", scope="global")
    before = rows(real)

    restore_backup(backup_path=backup, db_path=link)

    assert link.is_symlink() and sorted(p.name for p in link.parent.iterdir()) == ["memories.db"]
    (safety,) = real.parent.glob("real.db.pre-restore-*.bak")
    assert rows(safety) == before and later in {row[0] for row in rows(safety)}
    assert rows(real) == rows(backup)


def test_restore_through_a_symlink_to_a_lost_file_puts_that_file_back(tmp_path: Path) -> None:
    link, real = symlinked_database(tmp_path)
    seed(link, count=2)
    backup = tmp_path / "b.bak"
    create_backup(db_path=link, backup_path=backup)
    shutil.rmtree(real.parent)  # the volume the link points into was lost
    restore_backup(backup_path=backup, db_path=link)
    assert link.is_symlink() and rows(real) == rows(backup)
    loop = tmp_path / "loop.db"
    loop.symlink_to(loop)
    with pytest.raises(InvalidInputError, match="leads back to itself"):
        restore_backup(backup_path=backup, db_path=loop)


def test_restore_into_a_missing_file_creates_it(tmp_path: Path, db_path: Path) -> None:
    seed(db_path, count=2)
    create_backup(db_path=db_path, backup_path=tmp_path / "b.bak")
    target = tmp_path / "fresh.db"
    restore_backup(backup_path=tmp_path / "b.bak", db_path=target)
    assert rows(target) == rows(db_path)
    assert not list(tmp_path.glob("fresh.db.*"))  # nothing to keep aside


def test_restore_over_a_database_with_a_damaged_page_works(tmp_path: Path) -> None:
    source = tmp_path / "source.db"
    ids = seed(source, count=200)
    backup = tmp_path / "good.bak"
    create_backup(db_path=source, backup_path=backup)

    target = tmp_path / "damaged.db"
    shutil.copyfile(backup, target)
    conn = sqlite3.connect(target)
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    # The root pages of the memories table and of its indexes; page 1 (the schema) stays intact.
    roots = [r for (r,) in conn.execute(
        "SELECT rootpage FROM sqlite_master WHERE tbl_name = 'memories' AND rootpage > 0"
    )]
    conn.close()
    data = bytearray(target.read_bytes())
    for root in roots:
        data[(root - 1) * page_size: root * page_size] = b"\xff" * page_size
    target.write_bytes(bytes(data))
    with pytest.raises(sqlite3.DatabaseError):
        rows(target)

    restore_backup(backup_path=backup, db_path=target)  # the reason restore exists
    with Mnemosyne(session_id="s1", db_path=target) as mem:
        assert mem.get_stats().total == len(ids)


def test_a_restore_over_a_database_another_process_keeps_locked_changes_nothing(tmp_path: Path) -> None:
    from mnemosyne import DatabaseBusyError

    db = tmp_path / "m.db"
    seed(db)
    backup = tmp_path / "b.bak"
    create_backup(db_path=db, backup_path=backup)
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent("""
        import sqlite3, sys, time
        conn = sqlite3.connect(sys.argv[1], isolation_level=None)
        conn.execute("PRAGMA locking_mode = EXCLUSIVE")
        conn.execute("BEGIN IMMEDIATE"); conn.execute("COMMIT")  # keeps the file locked
        print("holding", flush=True)
        time.sleep(60)
    """), str(db)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "holding\n"
        before = sorted(p.name for p in tmp_path.iterdir())
        with pytest.raises(DatabaseBusyError):
            restore_backup(backup_path=backup, db_path=db, busy_timeout=0.5)
        assert sorted(p.name for p in tmp_path.iterdir()) == before  # not moved aside as unreadable
    finally:
        holder.kill()
        holder.wait()


def test_a_backup_of_a_damaged_database_is_refused_not_recorded(tmp_path: Path) -> None:
    from mnemosyne import CorruptDatabaseError

    db = tmp_path / "m.db"
    seed(db, count=200)
    conn = sqlite3.connect(db)
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    (root,) = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'audit_log'").fetchone()
    conn.close()
    data = bytearray(db.read_bytes())
    data[(root - 1) * page_size + 8: root * page_size] = b"\xff" * (page_size - 8)  # a page, not the header
    db.write_bytes(bytes(data))
    with pytest.raises((BackupError, CorruptDatabaseError), match="integrity"):
        create_backup(db_path=db, backup_path=tmp_path / "b.bak")
    assert not (tmp_path / "b.bak").exists() and not manifest_path(tmp_path / "b.bak").exists()


def test_a_restore_the_disk_cannot_hold_is_a_typed_error_and_changes_nothing(tmp_path: Path) -> None:
    source = tmp_path / "source.db"
    seed(source, count=300)
    create_backup(db_path=source, backup_path=tmp_path / "b.bak")
    done = under_size_limit(50_000, """
        from mnemosyne import MnemosyneError
        from mnemosyne.dr.recovery import restore_backup
        try:
            restore_backup(sys.argv[1], sys.argv[2])
        except MnemosyneError as error:
            report(error)
    """, str(tmp_path / "b.bak"), str(tmp_path / "new" / "m.db"))
    assert done.stdout.splitlines()[0] == "DiskFullError disk_full", done.stdout + done.stderr
    assert list((tmp_path / "new").iterdir()) == []


def test_a_backup_the_size_limit_cannot_hold_is_a_full_disk_and_leaves_nothing(tmp_path: Path) -> None:
    # SQLite reports the limit (EFBIG) writing the copy as a plain I/O error.
    source = tmp_path / "source.db"
    seed(source, count=300)
    size = source.stat().st_size
    backups = tmp_path / "backups"
    done = under_size_limit(size // 2, """
        from mnemosyne import MnemosyneError
        from mnemosyne.dr.recovery import create_backup
        try:
            create_backup(sys.argv[1], sys.argv[2])
        except MnemosyneError as error:
            report(error)
    """, str(source), str(backups / "b.bak"))
    kind, message = done.stdout.splitlines()
    assert kind == "DiskFullError disk_full", done.stdout + done.stderr
    assert "cannot write the backup" in message and "full (or a size limit was reached)" in message
    assert list(backups.iterdir()) == []  # no backup, manifest or temporary file
    manifest = create_backup(db_path=source, backup_path=backups / "b.bak")  # with room, the same backup is made
    assert verify_backup(backups / "b.bak") == manifest


def test_a_restore_whose_safety_copy_does_not_fit_is_a_full_disk_and_changes_nothing(tmp_path: Path) -> None:
    small, target = tmp_path / "small.db", tmp_path / "memories.db"
    seed(small, count=2)
    create_backup(db_path=small, backup_path=tmp_path / "small.bak")
    seed(target, count=400)
    before = rows(target)
    # Room for the staged backup, not for the copy of the larger database it replaces.
    done = under_size_limit(target.stat().st_size // 2, """
        from mnemosyne import MnemosyneError
        from mnemosyne.dr.recovery import restore_backup
        try:
            restore_backup(sys.argv[1], sys.argv[2])
        except MnemosyneError as error:
            report(error)
    """, str(tmp_path / "small.bak"), str(target))
    assert done.stdout.splitlines()[0] == "DiskFullError disk_full", done.stdout + done.stderr
    assert rows(target) == before
    assert not list(tmp_path.glob("memories.db.pre-restore-*")) and not list(tmp_path.glob(".memories.db*"))


def test_a_backup_to_a_full_disk_leaves_nothing_that_refuses_a_retry(tmp_path: Path) -> None:
    source = tmp_path / "source.db"
    seed(source, count=20)
    with tiny_disk(tmp_path / "full", size="2m") as full:
        ballast = fill(full)
        with pytest.raises(MnemosyneError, match="space|full"):
            create_backup(db_path=source, backup_path=full / "b.bak")
        assert sorted(path.name for path in full.iterdir()) == ["ballast"]
        ballast.unlink()  # room again: the same backup, retried, is made
        manifest = create_backup(db_path=source, backup_path=full / "b.bak")
        assert verify_backup(full / "b.bak") == manifest


def test_a_backup_of_another_page_size_restores_over_a_live_database(tmp_path: Path) -> None:
    source = tmp_path / "source.db"
    ids = seed(source, count=10)
    conn = sqlite3.connect(source, isolation_level=None)  # as older SQLite releases made them
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.execute("PRAGMA page_size = 1024")
    conn.execute("VACUUM")
    conn.close()
    create_backup(db_path=source, backup_path=tmp_path / "b.bak")
    live = tmp_path / "live.db"
    seed(live, count=3, session="live")
    with Mnemosyne(session_id="s1", db_path=live) as mem:
        restore_backup(backup_path=tmp_path / "b.bak", db_path=live)
        assert sorted(m.id for m in mem.recall("seeded kestrels", top_k=20)) == sorted(ids)


@pytest.mark.parametrize("killed_at", [1, 2])  # writing its manifest; naming its copy
def test_a_killed_backup_leaves_its_path_free_and_the_next_one_removes_what_it_left(
    tmp_path: Path, killed_at: int
) -> None:
    db = tmp_path / "m.db"
    seed(db, count=50)
    killed = textwrap.dedent("""
        import os, signal, sys
        import mnemosyne.storage.sqlite.backup_file as backup_file
        class Os:
            replaced = 0
            def __getattr__(self, name):
                return getattr(os, name)
            def replace(self, *args):
                Os.replaced += 1
                if Os.replaced == int(sys.argv[3]):
                    os.kill(os.getpid(), signal.SIGKILL)
                os.replace(*args)
        backup_file.os = Os()
        from mnemosyne.dr.recovery import create_backup
        create_backup(sys.argv[1], sys.argv[2])
    """)
    backups = tmp_path / "backups"
    done = subprocess.run([sys.executable, "-c", killed, str(db), str(backups / "nightly.bak"), str(killed_at)],
                          timeout=60)
    assert done.returncode == -9
    assert (backups / "nightly.bak").read_bytes() == CLAIM  # the name it held, and what it wrote
    assert any(p.name.endswith(".tmp") for p in backups.iterdir())
    create_backup(db_path=db, backup_path=backups / "nightly.bak")  # the path is free
    assert sorted(p.name for p in backups.iterdir()) == ["nightly.bak", "nightly.bak.manifest.json"]
    verify_backup(backups / "nightly.bak")


def test_a_users_empty_file_at_the_backup_path_is_no_killed_backup(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    seed(db)
    (tmp_path / "notes").touch()
    (tmp_path / "notes.manifest.json").write_text("the user's own notes", encoding="utf-8")
    with pytest.raises(InvalidInputError, match="already exists"):
        create_backup(db_path=db, backup_path=tmp_path / "notes")
    assert (tmp_path / "notes").read_bytes() == b""
    assert (tmp_path / "notes.manifest.json").read_text(encoding="utf-8") == "the user's own notes"


def test_backups_racing_for_one_path_in_one_process_make_one_backup(tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    db = tmp_path / "m.db"
    seed(db, count=200)

    def backup(_: int) -> str:
        try:
            create_backup(db_path=db, backup_path=tmp_path / "b.bak")
            return "made"
        except InvalidInputError:
            return "refused"

    with ThreadPoolExecutor(4) as pool:
        outcomes = sorted(pool.map(backup, range(4)))
    assert outcomes == ["made", "refused", "refused", "refused"]
    verify_backup(tmp_path / "b.bak")
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(("b.bak", ".b.bak"))) == [
        "b.bak", "b.bak.manifest.json"]


def test_backup_path_with_uri_special_characters(db_path: Path, tmp_path: Path) -> None:
    seed(db_path, count=2)
    backup = tmp_path / "weekly #1 100%.bak"
    assert create_backup(db_path=db_path, backup_path=backup).memory_count == 2
    assert verify_backup(backup).memory_count == 2


# -- stats ------------------------------------------------------------------------------


def test_last_backup_at_is_recorded(db_path: Path, tmp_path: Path) -> None:
    with Mnemosyne(db_path=db_path) as mem:
        mem.remember("something worth keeping")
        assert mem.get_stats().last_backup_at is None
        before = datetime.now(timezone.utc)
        create_backup(db_path=db_path, backup_path=tmp_path / "b.bak")
        after = datetime.now(timezone.utc)
        stamp = mem.get_stats().last_backup_at
    assert stamp is not None and stamp.tzinfo is not None
    assert before <= stamp <= after
    # A restore brings back contents that were backed up when that backup was made.
    restore_backup(backup_path=tmp_path / "b.bak", db_path=db_path)
    with Mnemosyne(db_path=db_path) as mem:
        restored = mem.get_stats().last_backup_at
    assert restored is not None and before <= restored <= after
    restore_backup(backup_path=tmp_path / "b.bak", db_path=tmp_path / "fresh.db")
    with Mnemosyne(db_path=tmp_path / "fresh.db") as mem:
        assert mem.get_stats().last_backup_at == restored


def test_a_backup_whose_file_name_is_not_utf8_restores(tmp_path: Path):
    db, backup = tmp_path / "m.db", tmp_path / os.fsdecode(b"caf\xe9.bak")
    with Mnemosyne(session_id="s", db_path=db) as mem:
        mem.remember("The font is Inter")
    create_backup(db_path=db, backup_path=backup)
    restore_backup(backup_path=backup, db_path=tmp_path / "restored.db")
    with Mnemosyne(session_id="s", db_path=tmp_path / "restored.db") as mem:
        assert [m.content for m in mem.timeline()] == ["The font is Inter"]


# -- a backup stays a backup -----------------------------------------------------------


def test_a_backup_is_not_opened_as_a_database(db_path: Path, tmp_path: Path) -> None:
    seed(db_path)
    backup = tmp_path / "nightly.bak"
    create_backup(db_path, backup)
    before = sha256(backup)
    # Opening it would switch its journal mode, upgrade an old schema, count recalls:
    # it would no longer match its manifest, and restore would refuse it.
    with pytest.raises(InvalidInputError, match="is a backup"):
        Mnemosyne(db_path=backup)
    assert sha256(backup) == before and verify_backup(backup).memory_count == 5


def test_a_manifest_field_a_later_release_adds_is_no_damage(db_path: Path, tmp_path: Path) -> None:
    seed(db_path)
    backup = tmp_path / "nightly.bak"
    create_backup(db_path, backup)
    manifest = json.loads(manifest_path(backup).read_text(encoding="utf-8"))
    manifest_path(backup).write_text(json.dumps({**manifest, "compression": "none"}), encoding="utf-8")
    assert verify_backup(backup).memory_count == 5
    assert restore_backup(backup, tmp_path / "restored.db").memory_count == 5
    # A newer format is another matter: this release cannot know what it means.
    manifest_path(backup).write_text(json.dumps({**manifest, "format": manifest["format"] + 1}), encoding="utf-8")
    with pytest.raises(BackupError, match="newer release"):
        verify_backup(backup)


def test_a_backup_backed_up_again_stays_as_it_was(db_path: Path, tmp_path: Path) -> None:
    seed(db_path)
    first = tmp_path / "first.bak"
    create_backup(db_path, first)
    before = sha256(first)
    assert create_backup(first, tmp_path / "offsite.bak").memory_count == 5
    assert sha256(first) == before and verify_backup(first).memory_count == 5
    assert verify_backup(tmp_path / "offsite.bak").memory_count == 5


def test_backups_rotated_as_hard_links_verify_copy_and_restore(db_path: Path, tmp_path: Path) -> None:
    # As rsnapshot keeps them. Nothing writes a backup, and it keeps no log, so its
    # other names are no danger (a database's are: see test_storage_errors.py).
    seed(db_path)
    first = tmp_path / "daily.0" / "m.bak"
    create_backup(db_path, first)
    rotated = tmp_path / "daily.1" / "m.bak"
    rotated.parent.mkdir()
    for made in (first, manifest_path(first)):
        os.link(made, rotated.parent / made.name)
    assert verify_backup(rotated).memory_count == 5
    assert create_backup(rotated, tmp_path / "offsite.bak").memory_count == 5
    restore_backup(rotated, tmp_path / "restored.db")
    assert rows(tmp_path / "restored.db") == rows(db_path)


def test_a_restore_into_a_backup_is_refused_and_changes_nothing(db_path: Path, tmp_path: Path) -> None:
    seed(db_path)
    one, two = tmp_path / "one.bak", tmp_path / "two.bak"
    create_backup(db_path, one)
    create_backup(db_path, two)
    files = {path.name: sha256(path) for path in tmp_path.iterdir()}
    with pytest.raises(InvalidInputError, match="is a backup"):
        restore_backup(one, two)
    assert {path.name: sha256(path) for path in tmp_path.iterdir()} == files
