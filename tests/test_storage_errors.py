"""Failures of the disk and the file become typed errors that say what to do.

Tests run as root here, which ignores permission bits, so read-only locations are
made with ``chattr +i`` (immutable: even root cannot write) and a full disk with a
tiny tmpfs mount; each test skips, saying why, where the machine does not allow it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from mnemosyne import (
    CorruptDatabaseError,
    DatabaseBusyError,
    DiskFullError,
    Mnemosyne,
    NotADatabaseError,
    ReadOnlyDatabaseError,
    StorageError,
)
from mnemosyne.dr.doctor import diagnose
from mnemosyne.dr.recovery import create_backup, restore_backup
from mnemosyne.storage.sqlite.migrations import LATEST_VERSION
from size_limit import fill, tiny_disk, under_size_limit


def make_db(path: Path, n: int = 1) -> Path:
    with Mnemosyne(session_id="s", db_path=path) as mem:
        mem.remember_many([f"memory {i} about apples " * 20 for i in range(n)])
    return path


@contextlib.contextmanager
def immutable(path: Path) -> Iterator[None]:
    if shutil.which("chattr") is None:
        pytest.skip("chattr is not installed, so no location can be made read-only for root")
    done = subprocess.run(["chattr", "+i", str(path)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot make {path} immutable on this filesystem: {done.stderr.strip()}")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


def test_a_file_that_is_not_sqlite(tmp_path: Path):
    notes = tmp_path / "notes.db"
    notes.write_text("shopping list: apples, pears\n" * 100)
    with pytest.raises(NotADatabaseError, match="not a SQLite database") as info:
        Mnemosyne(db_path=notes)
    assert isinstance(info.value.__cause__, sqlite3.DatabaseError)
    assert not isinstance(info.value, CorruptDatabaseError)


# Many applications number their schemas in user_version, as Mnemosyne does: one
# below, equal to and above this release's.
@pytest.mark.parametrize("user_version", [0, 3, LATEST_VERSION, LATEST_VERSION + 3])
def test_another_applications_sqlite_database_is_refused_and_left_as_it_was(tmp_path: Path, user_version: int):
    app = tmp_path / "app.sqlite"
    conn = sqlite3.connect(app)
    conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
    conn.execute("INSERT INTO customers (name) VALUES ('Ada')")
    conn.execute(f"PRAGMA user_version = {user_version}")
    conn.commit()
    conn.close()
    before = app.read_bytes()
    with pytest.raises(NotADatabaseError, match="another application's SQLite database") as info:
        Mnemosyne(db_path=app, embedder="none")
    assert "customers" in str(info.value) and info.value.path == str(app)
    assert not isinstance(info.value, CorruptDatabaseError)
    assert app.read_bytes() == before  # no tables added, still in rollback-journal mode
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.sqlite"]
    (problem,) = diagnose(app).problems
    assert problem.name == "schema" and "another application's (tables customers" in problem.detail
    assert app.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["app.sqlite"]


def test_a_mnemosyne_database_with_a_table_of_its_users_own_still_opens(tmp_path: Path):
    db = tmp_path / "m.db"
    with Mnemosyne(session_id="s", db_path=db, embedder="none") as mem:
        mem.remember("stored before the user's table was added")
    with contextlib.closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("CREATE TABLE my_notes (body TEXT)")
    with Mnemosyne(session_id="s", db_path=db, embedder="none") as mem:
        assert mem.get_stats().total == 1


def test_an_empty_sqlite_file_becomes_a_database(tmp_path: Path):
    empty = tmp_path / "empty.db"
    sqlite3.connect(empty).close()  # SQLite's own empty file: zero bytes
    conn = sqlite3.connect(tmp_path / "blank.db")
    conn.execute("PRAGMA user_version = 0")
    conn.execute("VACUUM")  # a real header, still no tables
    conn.close()
    for path in (empty, tmp_path / "blank.db"):
        with Mnemosyne(session_id="s", db_path=path) as mem:
            mem.remember("the first memory")
            assert mem.get_stats().total == 1


def test_a_truncated_database(tmp_path: Path):
    db = make_db(tmp_path / "m.db", n=2000)
    with open(db, "r+b") as handle:
        handle.truncate(db.stat().st_size // 2)
    with pytest.raises(CorruptDatabaseError, match="damaged or truncated.*mnemosyne restore") as info:
        with Mnemosyne(db_path=db) as mem:
            mem.recall("apples")
            mem.get_stats()
    assert isinstance(info.value, NotADatabaseError)  # one except clause catches both
    assert info.value.__cause__ is not None


def test_a_database_with_damaged_pages(tmp_path: Path):
    db = make_db(tmp_path / "m.db", n=2000)
    with open(db, "r+b") as handle:  # overwrite interior pages, keep the header
        handle.seek(8 * 4096)
        handle.write(os.urandom(64 * 4096))
    with pytest.raises(CorruptDatabaseError):
        with Mnemosyne(session_id="s", db_path=db) as mem:
            mem.recall("apples")
            mem.get_stats()
            mem.remember_many([f"more {i}" * 50 for i in range(500)])


def test_a_read_only_file(tmp_path: Path):
    db = make_db(tmp_path / "m.db")
    before = db.read_bytes()
    with contextlib.ExitStack() as read_only:
        read_only.enter_context(immutable(db))
        mem = read_only.enter_context(Mnemosyne(session_id="s", db_path=db, embedder="none"))
        assert [m.content for m in mem.recall("apples")]  # reading still works
        with pytest.raises(ReadOnlyDatabaseError, match="read-only.*write access") as info:
            mem.remember("cannot be stored")
        assert isinstance(info.value.__cause__, sqlite3.OperationalError)
        assert db.read_bytes() == before
        subprocess.run(["chattr", "-i", str(db)], check=True)
        # Writable again, as the error asked: the same instance writes (SQLite had
        # opened its connection read-only, and would have kept it so).
        mem.remember("stored once the file is writable")
        assert mem.get_stats().total == 2


def test_a_dry_run_sleep_reads_a_read_only_file(tmp_path: Path):
    db = make_db(tmp_path / "m.db", n=3)
    before = db.read_bytes()
    command = [sys.executable, "-m", "mnemosyne", "sleep", "--db", str(db), "--json"]
    with immutable(db):
        dry = subprocess.run([*command, "--dry-run"], capture_output=True, text=True, timeout=60)
        assert dry.returncode == 0, dry.stderr
        assert json.loads(dry.stdout)["dry_run"] is True
        real = subprocess.run(command, capture_output=True, text=True, timeout=60)
        assert real.returncode == 3 and json.loads(real.stderr)["error"]["code"] == "read_only"
    assert db.read_bytes() == before


def test_a_read_only_shared_memory_file_is_named_not_the_database(tmp_path: Path):
    # A read of a read-only file leaves read-only -wal and -shm files: made writable
    # again, the file itself is not what refuses the write.
    db = make_db(tmp_path / "m.db")
    shm = tmp_path / "m.db-shm"
    with Mnemosyne(session_id="s", db_path=db, embedder="none") as holder:  # keeps the -shm file
        holder.recall("apples")
        assert shm.exists()
        with immutable(shm):
            command = [sys.executable, "-m", "mnemosyne", "remember", "refused", "--db", str(db), "--json"]
            refused = subprocess.run(command, capture_output=True, text=True, timeout=60)
        assert refused.returncode == 3, refused.stderr
        error = json.loads(refused.stderr)["error"]
        assert error["code"] == "read_only"
        assert error["message"].startswith(f"cannot remember: {shm} is read-only"), error["message"]


def test_a_database_file_deleted_while_open_takes_no_more_writes(tmp_path: Path):
    db = make_db(tmp_path / "m.db")
    with Mnemosyne(session_id="s", db_path=db, embedder="none") as mem:
        mem.remember("written before the file was deleted")
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
        with pytest.raises(StorageError, match="deleted or replaced"):
            mem.remember("would be written into the deleted file")
        # A new thread's new connection must not create an empty file there.
        assert "deleted or replaced" in str(error_in_a_new_thread(lambda: mem.remember("from another thread")))
        assert not db.exists()


def error_in_a_new_thread(call: Callable[[], object]) -> StorageError | None:
    """The StorageError ``call`` raises when run in a thread of its own (a new connection)."""
    failures: list[StorageError] = []

    def run() -> None:
        try:
            call()
        except StorageError as exc:
            failures.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    return failures[0] if failures else None


def test_a_database_file_replaced_while_open_is_not_read_as_the_same(tmp_path: Path):
    db = make_db(tmp_path / "m.db")
    other = make_db(tmp_path / "other.db")
    with Mnemosyne(session_id="s", db_path=db, embedder="none") as mem:
        assert mem.recall("apples")
        os.replace(other, db)  # as a restore over a damaged file does
        for suffix in ("-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
        # A new thread's connection would open the new file, and mix two databases.
        assert "deleted or replaced" in str(error_in_a_new_thread(mem.get_stats))


def test_a_read_only_folder(tmp_path: Path):
    folder = tmp_path / "ro"
    folder.mkdir()
    db = make_db(folder / "m.db")  # closed cleanly: no -wal/-shm left to reuse
    with immutable(folder):
        with pytest.raises(ReadOnlyDatabaseError, match="make the folder writable"):
            Mnemosyne(db_path=folder / "new.db")
        with pytest.raises(ReadOnlyDatabaseError):
            with Mnemosyne(db_path=db) as mem:
                mem.recall("apples")
        # SQLite cannot read a WAL database where it may not create its -shm: doctor
        # and backups say so, rather than call the file damaged or read it stale.
        (problem,) = diagnose(db).problems
        assert problem.name == "file" and "is not writable" in problem.detail
        with pytest.raises(ReadOnlyDatabaseError, match="-shm"):
            create_backup(db_path=db, backup_path=tmp_path / "m.bak")


def test_a_full_disk_size_limit_rolls_back(tmp_path: Path):
    db = tmp_path / "m.db"
    with Mnemosyne(session_id="s", db_path=db) as mem:
        mem.remember("small first memory")
        # SQLite's own size cap produces the same SQLITE_FULL as a full disk.
        mem._store.connection().execute("PRAGMA max_page_count = 12")
        with pytest.raises(DiskFullError, match="full.*nothing was written") as info:
            mem.remember_many(["big " * 5000] * 1 + [f"item {i} " * 400 for i in range(20)])
        assert isinstance(info.value.__cause__, sqlite3.OperationalError)
        assert mem.get_stats().total == 1
        assert [m.content for m in mem.recall("small first")] == ["small first memory"]


def test_a_really_full_filesystem(tmp_path: Path):
    with tiny_disk(tmp_path / "tiny") as mount:
        with Mnemosyne(session_id="s", db_path=mount / "m.db") as mem:
            stored = 0
            with pytest.raises(DiskFullError):
                for i in range(1000):
                    mem.remember(f"filling the disk {i} " * 100)
                    stored += 1
            assert 0 < stored < 1000
            assert mem.get_stats().total == stored  # every acknowledged write is there
        conn = sqlite3.connect(mount / "m.db")
        try:
            assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        finally:
            conn.close()


def test_a_file_size_limit_the_wal_reaches_is_a_full_disk_and_rolls_back(tmp_path: Path):
    # SQLite reports the limit (EFBIG) as a plain I/O error, not as SQLITE_FULL.
    db = tmp_path / "m.db"
    done = under_size_limit(2_000_000, """
        from mnemosyne import Mnemosyne, MnemosyneError
        with Mnemosyne(session_id="s", db_path=sys.argv[1], embedder="none") as mem:
            mem.remember("small first memory")
            try:
                mem.remember_many([f"big {i} " + "x" * 100_000 for i in range(40)])
            except MnemosyneError as error:
                report(error)
            print(mem.get_stats().total)
    """, str(db))
    kind, message, total = done.stdout.splitlines()
    assert kind == "DiskFullError disk_full", done.stdout + done.stderr
    assert "full (or a size limit was reached)" in message and str(db) in message
    assert total == "1"  # nothing of the batch was written
    with Mnemosyne(session_id="s", db_path=db, embedder="none") as mem:
        assert [m.content for m in mem.recall("small first")] == ["small first memory"]


def test_opening_where_the_shm_cannot_grow_is_a_full_disk(tmp_path: Path):
    db = tmp_path / "m.db"
    with Mnemosyne(session_id="s", db_path=db, embedder="none") as mem:
        mem.remember("kept")
    before = db.read_bytes()
    # The -shm SQLite makes on opening takes 32 KiB: a smaller limit refuses it.
    done = under_size_limit(16_384, """
        from mnemosyne import Mnemosyne, MnemosyneError
        try:
            Mnemosyne(session_id="s", db_path=sys.argv[1], embedder="none")
        except MnemosyneError as error:
            report(error)
    """, str(db))
    assert done.stdout.splitlines()[0] == "DiskFullError disk_full", done.stdout + done.stderr
    assert db.read_bytes() == before


def test_an_io_error_writing_is_a_full_disk_only_where_room_ran_out(tmp_path: Path):
    from mnemosyne.storage.sqlite.driver_errors import translate

    def io_error(name: str, code: int) -> sqlite3.OperationalError:
        exc = sqlite3.OperationalError("disk I/O error")
        exc.sqlite_errorcode, exc.sqlite_errorname = code, name
        return exc

    db = tmp_path / "m.db"
    more_than_the_disk = shutil.disk_usage(tmp_path).total + 1
    # Room to spare and no file-size limit: the disk itself failed.
    failing = translate(io_error("SQLITE_IOERR_WRITE", 778), db, "remember")
    assert type(failing) is StorageError and "I/O error" in str(failing)
    # A write that needed more than the disk has left: a full disk, however SQLite put it.
    full = translate(io_error("SQLITE_IOERR_WRITE", 778), db, "write the backup", needed=more_than_the_disk)
    assert isinstance(full, DiskFullError) and f"{more_than_the_disk:,} bytes" in str(full)
    # A read never runs out of room.
    read = translate(io_error("SQLITE_IOERR_READ", 266), db, "recall", needed=more_than_the_disk)
    assert type(read) is StorageError


def test_opening_a_database_on_a_full_disk_is_a_full_disk(tmp_path: Path):
    with tiny_disk(tmp_path / "tiny") as mount:
        db = mount / "m.db"
        with Mnemosyne(session_id="s", db_path=db, embedder="none") as mem:
            mem.remember("kept")
        ballast = fill(mount)
        # SQLite cannot make the -shm it needs, and says so as a plain I/O error.
        with pytest.raises(DiskFullError, match="full"):
            Mnemosyne(session_id="s", db_path=db, embedder="none")
        ballast.unlink()
        with Mnemosyne(session_id="s", db_path=db, embedder="none") as mem:
            assert mem.get_stats().total == 1


HOLD_LOCK = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
if sys.argv[2] == "exclusive":
    conn.execute("PRAGMA locking_mode = EXCLUSIVE")
    conn.execute("BEGIN EXCLUSIVE")
else:
    conn.execute("BEGIN IMMEDIATE")
print("held", flush=True)
time.sleep(60)
"""


@contextlib.contextmanager
def lock_held(db: Path, how: str) -> Iterator[None]:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(db), how], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        yield
    finally:
        holder.kill()
        holder.wait()


def test_another_program_holding_an_exclusive_lock(tmp_path: Path):
    db = make_db(tmp_path / "m.db")
    with lock_held(db, "exclusive"):
        start = time.monotonic()
        with pytest.raises(DatabaseBusyError, match="exclusive lock") as info:
            Mnemosyne(db_path=db, busy_timeout=0.5)
        assert 0.4 < time.monotonic() - start < 5
        assert isinstance(info.value, StorageError) and info.value.path == str(db)
    with Mnemosyne(session_id="s", db_path=db) as mem:  # usable again once released
        mem.remember("after the lock")


def test_a_long_writer_makes_writes_wait_then_fail_but_reads_go_on(tmp_path: Path):
    db = make_db(tmp_path / "m.db")
    with Mnemosyne(session_id="s", db_path=db, busy_timeout=0.4) as mem:
        with lock_held(db, "immediate"):
            with pytest.raises(DatabaseBusyError, match=r"for 0\.4 s \(busy_timeout\)"):
                mem.remember("waits, then gives up")
            assert mem.recall("apples")  # WAL: readers never wait for the writer
        assert mem.remember("now it goes through")
        assert mem.get_stats().total == 2


def test_a_path_through_a_symlinked_folder_and_dotdot_is_the_file_the_system_names(tmp_path: Path):
    (tmp_path / "real" / "sub").mkdir(parents=True)
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "link").symlink_to(tmp_path / "real" / "sub")
    db = tmp_path / "app" / "link" / ".." / "m.db"  # the system reads it as real/m.db
    with Mnemosyne(session_id="s", db_path=db, embedder="none") as mem:
        mem.remember("stored through the link")
        writer = threading.Thread(target=lambda: mem.remember("stored by another thread's connection"))
        writer.start()
        writer.join()
        assert mem.get_stats().total == 2
    assert (tmp_path / "real" / "m.db").exists() and not (tmp_path / "app" / "m.db").exists()
    assert create_backup(db_path=db, backup_path=tmp_path / "m.bak").memory_count == 2


def test_a_relative_path_whose_working_directory_is_gone_is_a_storage_error(tmp_path: Path):
    gone = tmp_path / "gone"
    gone.mkdir()
    here = os.getcwd()
    os.chdir(gone)
    try:
        gone.rmdir()
        with pytest.raises(StorageError, match="working directory"):
            Mnemosyne(db_path="m.db", embedder="none")
    finally:
        os.chdir(here)


WRITER = """
import sys
from mnemosyne import Mnemosyne

with Mnemosyne(session_id=sys.argv[2], db_path=sys.argv[1], embedder="none") as mem:
    for i in range(40):
        mem.remember(f"{sys.argv[2]} note {i}")
"""


def write_at_once(*paths: Path) -> list[tuple[int, str]]:
    """Run WRITER through each path in a process of its own, all at once; return each
    process's exit status and error output."""
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(path), f"writer-{i}"], stderr=subprocess.PIPE, text=True)
        for i, path in enumerate(paths)
    ]
    outcomes = []
    for writer in writers:
        errors = writer.communicate(timeout=120)[1]
        outcomes.append((writer.returncode, errors))
    return outcomes


def mnemosyne_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mnemosyne", *args], capture_output=True, text=True, timeout=60)


def test_a_database_file_with_two_names_is_refused_by_every_way_in_and_left_as_it_was(tmp_path: Path):
    db = tmp_path / "a.db"
    with Mnemosyne(session_id="s", db_path=db, embedder="none") as mem:
        mem.remember("written before the second name was made")
    backup = tmp_path / "backups" / "a.bak"
    create_backup(db_path=db, backup_path=backup)
    other = tmp_path / "b.db"
    os.link(db, other)  # as `cp -al` or a second mount of the same disk makes
    before = db.read_bytes()
    # Two processes writing through the two names would each keep a log of their own.
    for status, errors in write_at_once(db, other):
        assert status == 1 and "2 names (hard links)" in errors, errors
    for path in (db, other):
        with pytest.raises(StorageError, match=r"one file with 2 names \(hard links\).*symbolic link is fine") as info:
            Mnemosyne(db_path=path, embedder="none")
        assert info.value.path == str(path)
    with pytest.raises(StorageError, match="hard links"):  # a session id only a stored session may have
        Mnemosyne(session_id="x" * 300, db_path=other, embedder="none")
    with pytest.raises(StorageError, match="hard links"):
        create_backup(db_path=other, backup_path=tmp_path / "backups" / "b.bak")
    with pytest.raises(StorageError, match="hard links"):
        restore_backup(backup_path=backup, db_path=other)
    (problem,) = diagnose(other).problems
    assert problem.name == "file" and "hard links" in problem.detail
    for command in (["doctor"], ["export", str(tmp_path / "out.jsonl")], ["stats"]):
        done = mnemosyne_cli(*command, "--db", str(other))
        assert done.returncode == 3 and "hard links" in done.stdout + done.stderr, (command, done.stderr)
    assert db.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.db", "b.db", "backups"]
    assert sorted(p.name for p in backup.parent.iterdir()) == ["a.bak", "a.bak.manifest.json"]
    other.unlink()  # one name again, as the error asks
    with Mnemosyne(session_id="s", db_path=db, embedder="none") as mem:
        assert [m.content for m in mem.recall("second name")] == ["written before the second name was made"]
        assert mem.doctor().ok


def test_a_symbolic_link_to_a_database_shares_its_log(tmp_path: Path):
    # What the refusal of a second name suggests instead: SQLite follows the link to
    # the file, and keeps the log beside the file, whichever name a process used.
    db = tmp_path / "real" / "m.db"
    with Mnemosyne(session_id="s", db_path=db, embedder="none") as mem:
        mem.remember("written through the file's own name")
    link = tmp_path / "app" / "m.db"
    link.parent.mkdir()
    link.symlink_to(db)
    for status, errors in write_at_once(db, link):
        assert status == 0, errors
    with Mnemosyne(session_id="s", db_path=link, embedder="none") as mem:
        assert mem.get_stats().total == 81
        assert mem.doctor().ok
    assert [p.name for p in link.parent.iterdir()] == ["m.db"]


KILLED_WRITER = """
import os, sys
from mnemosyne import Mnemosyne

mem = Mnemosyne(session_id="s", db_path=sys.argv[1], embedder="none")
for i in range(30):
    mem.remember(f"committed note {i}")
os.kill(os.getpid(), 9)  # no checkpoint at close: the last writes stay in the -wal
"""


@pytest.mark.parametrize("left", ["missing", "empty"])
def test_a_leftover_wal_is_refused_and_kept_not_discarded_by_a_new_database(tmp_path: Path, left: str):
    db, wal = tmp_path / "m.db", tmp_path / "m.db-wal"
    subprocess.run([sys.executable, "-c", KILLED_WRITER, str(db)], timeout=120)
    assert wal.stat().st_size > 0
    moved = tmp_path / "moved" / "m.db"
    moved.parent.mkdir()
    db.rename(moved)  # the file alone: its -wal and -shm stay behind
    if left == "empty":
        db.touch()
    files = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    refused = rf"{left}, but {re.escape(str(wal))} is left over.*Put the database file back.*move m\.db-wal"
    with pytest.raises(StorageError, match=refused) as info:
        Mnemosyne(session_id="s", db_path=db, embedder="none")
    assert info.value.path == str(db)
    if left == "empty":  # a long session id is looked up in the file before it is opened
        with pytest.raises(StorageError, match=refused):
            Mnemosyne(session_id="x" * 300, db_path=db, embedder="none")
        with pytest.raises(StorageError, match=refused):
            create_backup(db_path=db, backup_path=tmp_path / "backups" / "m.bak")
    (problem,) = diagnose(db).problems
    assert problem.name == "file" and re.search(refused, problem.detail), problem.detail
    done = mnemosyne_cli("remember", "a fresh start", "--db", str(db))
    assert done.returncode == 3 and re.search(refused, done.stderr), done.stderr
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()} == files
    if left == "empty":
        db.unlink()
    moved.rename(db)  # put back, as the error asks: every committed memory is there
    with Mnemosyne(session_id="s", db_path=db, embedder="none") as mem:
        assert mem.get_stats().total == 30
        assert mem.doctor().ok


def test_an_empty_leftover_wal_is_no_obstacle(tmp_path: Path):
    (tmp_path / "m.db-wal").touch()  # it holds no write to lose
    with Mnemosyne(session_id="s", db_path=tmp_path / "m.db", embedder="none") as mem:
        mem.remember("the first memory")
        assert mem.get_stats().total == 1
