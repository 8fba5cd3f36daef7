"""Threads of one process sharing one Mnemosyne, and contention that always resolves."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

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
