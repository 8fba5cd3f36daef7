"""Recall hits are counted in batches that never fail a recall and are never lost at exit."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import time
from pathlib import Path

from mnemosyne import Mnemosyne


def test_recall_hits_are_counted_in_batches(tmp_path: Path):
    db = tmp_path / "m.db"
    with Mnemosyne(session_id="s", db_path=db) as mem:
        memory_id = mem.remember("the deploy key rotates monthly")
        for _ in range(5):
            mem.recall("deploy key")
        assert mem._store.access.pending() == 1  # held in memory, not written per recall
    with Mnemosyne(session_id="s", db_path=db) as mem:
        assert mem.get(memory_id).access_count == 5  # flushed on close


RECALL_AND_EXIT = """
import sys
from mnemosyne import Mnemosyne
def recall_twice():
    mem = Mnemosyne(session_id="s", db_path=sys.argv[1], embedder="none")
    mem.recall("deploy key")
    mem.recall("deploy key")
recall_twice()  # the instance is dropped without close()
mem = Mnemosyne(session_id="s", db_path=sys.argv[1], embedder="none")
mem.recall("deploy key")  # still open when the process exits
"""


def test_counts_are_written_when_an_instance_is_dropped_or_the_process_exits(tmp_path: Path):
    db = tmp_path / "m.db"
    with Mnemosyne(session_id="s", db_path=db, embedder="none") as mem:
        memory_id = mem.remember("the deploy key rotates monthly")
    subprocess.run([sys.executable, "-c", RECALL_AND_EXIT, str(db)], check=True, timeout=60)
    with Mnemosyne(session_id="s", db_path=db, embedder="none") as mem:
        assert mem.get(memory_id).access_count == 3


def test_a_recall_does_not_change_the_file_until_a_batch_is_due(tmp_path: Path):
    db = tmp_path / "m.db"
    with Mnemosyne(session_id="s", db_path=db) as mem:
        mem.remember("reading is free")
        wal = db.with_name(db.name + "-wal")
        before = hashlib.sha256(db.read_bytes() + wal.read_bytes()).hexdigest()
        for _ in range(20):
            assert mem.recall("reading")
        assert hashlib.sha256(db.read_bytes() + wal.read_bytes()).hexdigest() == before


HOLD = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("held", flush=True)
time.sleep(60)
"""


def test_a_locked_database_never_fails_or_stalls_a_recall(tmp_path: Path):
    db = tmp_path / "m.db"
    with Mnemosyne(session_id="s", db_path=db) as mem:
        memory_id = mem.remember("statistics are best effort")
        mem._store.access.batch = 1  # flush on every recall
        holder = subprocess.Popen([sys.executable, "-c", HOLD, str(db)], stdout=subprocess.PIPE, text=True)
        try:
            assert holder.stdout.readline().strip() == "held"
            start = time.monotonic()
            for _ in range(3):
                assert [m.id for m in mem.recall("statistics")] == [memory_id]
            assert time.monotonic() - start < 2  # a flush waits ~50 ms at most
            assert mem._store.access.pending() == 1  # kept for later, not lost
        finally:
            holder.kill()
            holder.wait()
        mem.recall("statistics")
        assert mem._store.access.pending() == 0
        assert mem.get(memory_id).access_count == 4


FORK_WORKERS_THAT_EXIT_NORMALLY = """
import os, sys
from mnemosyne import Mnemosyne
mem = Mnemosyne(session_id="s", db_path=sys.argv[1], embedder="none")
mem.remember("the deploy key rotates monthly")
mem.recall("deploy key")  # one hit, still pending when the workers are forked
workers = []
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        sys.exit(0)  # a worker that ends as gunicorn's do: atexit handlers run
    workers.append(pid)
print([os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in workers])
mem.close()
"""


def test_forked_workers_do_not_count_the_parents_hits_again(tmp_path: Path):
    db = tmp_path / "m.db"
    done = subprocess.run([sys.executable, "-c", FORK_WORKERS_THAT_EXIT_NORMALLY, str(db)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[0, 0, 0]"
    with Mnemosyne(session_id="s", db_path=db, embedder="none") as mem:
        assert [m.access_count for m in mem.timeline()] == [1]
