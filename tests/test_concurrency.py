"""Threads of one process sharing one Mnemosyne, and contention that always resolves."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from mnemosyne import Mnemosyne
from mnemosyne.dr.doctor import diagnose


def test_threads_write_and_read_one_instance(tmp_path: Path):
    errors: list[BaseException] = []
    with Mnemosyne(session_id="s", db_path=tmp_path / "m.db") as mem:
        def writer(w: int) -> None:
            try:
                for i in range(60):
                    mem.remember(f"thread {w} wrote item {i}")
                    if i % 10 == 0:
                        mem.remember_many([f"thread {w} batch {i} part {j}" for j in range(5)])
            except BaseException as exc:  # noqa: BLE001 - collected and asserted empty
                errors.append(exc)

        def reader() -> None:
            try:
                for _ in range(100):
                    mem.recall("thread wrote item", top_k=5)
                    mem.get_stats()
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)

        threads = [threading.Thread(target=writer, args=(w,)) for w in range(6)]
        threads += [threading.Thread(target=reader) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert mem.get_stats().total == 6 * (60 + 6 * 5)
    assert diagnose(tmp_path / "m.db").ok


CLOSE_WHILE_IN_USE = """
import sys, threading, time
from mnemosyne import Mnemosyne, MnemosyneError

mem = Mnemosyne(session_id="s", db_path=sys.argv[1], embedder="none")
mem.remember_many([f"note {i} about the quarterly roadmap" for i in range(300)])
stop, seen = threading.Event(), set()

def work():
    while not stop.is_set():
        try:
            mem.recall("roadmap", top_k=20)
            mem.remember("another roadmap note", allow_duplicate=True)
        except MnemosyneError as exc:
            seen.add(type(exc).__name__)
        except Exception as exc:
            seen.add(f"untyped {type(exc).__name__}: {exc}")

threads = [threading.Thread(target=work) for _ in range(3)]
for thread in threads:
    thread.start()
time.sleep(0.5)
mem.close()  # shutting down while requests are in flight
time.sleep(0.3)
stop.set()
for thread in threads:
    thread.join()
print(sorted(seen))
"""


def test_closing_while_other_threads_use_the_instance_is_a_typed_error(tmp_path: Path):
    # In a child process: closing a connection under a running statement crashed the
    # interpreter (SIGSEGV) before.
    for _ in range(3):
        done = subprocess.run([sys.executable, "-c", CLOSE_WHILE_IN_USE, str(tmp_path / "m.db")],
                              capture_output=True, text=True, timeout=120)
        assert (done.returncode, done.stdout.strip()) == (0, "['StorageError']"), done.stderr
    assert diagnose(tmp_path / "m.db").ok


def files_open_on(db: Path) -> int:
    """How many files this process holds open on the database (its -wal and -shm included)."""
    names = {str(db), f"{db}-wal", f"{db}-shm"}
    targets = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            targets.append(os.readlink(f"/proc/self/fd/{fd}"))
        except FileNotFoundError:  # the listing's own, closed since
            pass
    return sum(target in names for target in targets)


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts open files in /proc")
def test_threads_that_end_leave_no_connection_open(tmp_path: Path):
    # As a server runs requests: each on a thread that ends after a while. Each thread
    # kept its connection (two open files) until close(), and a long-running server
    # ran out of file descriptors.
    db = tmp_path / "m.db"
    with Mnemosyne(session_id="s", db_path=db, embedder="none") as mem:
        mem.remember("hello world")

        def recall_on_new_threads(count: int) -> int:
            for _ in range(count):
                thread = threading.Thread(target=mem.recall, args=("hello",))
                thread.start()
                thread.join()
            mem.get_stats()  # the next operation closes what ended threads left
            return files_open_on(db)

        after_ten = recall_on_new_threads(10)
        after_many_more = recall_on_new_threads(300)
        # This thread's connection (the file, -wal, -shm), and a file SQLite may keep
        # open to reuse while this process holds locks on the database.
        assert after_many_more == after_ten <= 4
    assert files_open_on(db) == 0
