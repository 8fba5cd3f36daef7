"""Worker processes forked from a process that has the database open (multiprocessing's
default start method on Linux before Python 3.14), while its threads use it.

Each scenario runs in a process of its own: a child that hangs is killed there, and
the test process never forks with a database open.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from mnemosyne.dr.doctor import diagnose

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")

PRELUDE = """
import json, multiprocessing, sqlite3, sys, threading, time
from mnemosyne import Mnemosyne, StorageError

db = sys.argv[1]
fork = multiprocessing.get_context("fork")

def run(worker, *args):
    process = fork.Process(target=worker, args=args)
    process.start()
    return process

def outcome(process, timeout=60):
    process.join(timeout)
    if process.is_alive():
        process.kill()
        return "hung"
    return process.exitcode

def contents():
    return [row[0] for row in sqlite3.connect(db).execute("SELECT content FROM memories ORDER BY content")]
"""

WORKERS_WHILE_THE_PARENT_WRITES = PRELUDE + """
parent = Mnemosyne(session_id="parent", db_path=db, embedder="none")
parent.remember("the parent's first note")
inside, stop = threading.Event(), threading.Event()

def hold_a_write():  # still inside its transaction when the first worker is forked
    with parent._store._db.write("hold the write lock"):
        inside.set()
        time.sleep(0.5)

def keep_writing():
    while not stop.is_set():
        parent.remember_many([f"parent note {time.time()} {i}" for i in range(20)])

def worker(n, inherited):
    mem = parent if inherited else Mnemosyne(session_id="worker", db_path=db, embedder="none", busy_timeout=10)
    for i in range(20):
        mem.remember(f"worker {n} note {i}", scope="global")
    mem.recall(f"worker {n}")

threads = [threading.Thread(target=hold_a_write), threading.Thread(target=keep_writing)]
for thread in threads:
    thread.start()
inside.wait()
workers = [run(worker, n, n % 2 == 1) for n in range(4)]  # odd ones use the instance they inherited
results = [outcome(process) for process in workers]
stop.set()
for thread in threads:
    thread.join()
parent.close()
print(json.dumps({"exit codes": results, "worker notes": sum(c.startswith("worker ") for c in contents())}))
"""


def test_workers_forked_while_other_threads_write_can_all_write(tmp_path: Path):
    # Forked inside another thread's write, a worker found the file locked for ever,
    # even from an instance of its own: busy_timeout, then DatabaseBusyError.
    done = subprocess.run([sys.executable, "-c", WORKERS_WHILE_THE_PARENT_WRITES, str(tmp_path / "m.db")],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"exit codes": [0, 0, 0, 0], "worker notes": 4 * 20}, done.stderr
    assert diagnose(tmp_path / "m.db").ok


WORKER_OUTLIVING_THE_PARENTS_INSTANCE = PRELUDE + """
parent = Mnemosyne(session_id="parent", db_path=db, embedder="none")
parent.remember("the parent's note")
ready, parent_closed = fork.Event(), fork.Event()

def worker():
    with Mnemosyne(session_id="worker", db_path=db, embedder="none") as mem:
        mem.remember("written before the parent closed")
        ready.set()
        parent_closed.wait(60)
        mem.remember("written after the parent closed")

process = run(worker)
ready.wait(60)
parent.close()  # its last connection: SQLite checkpoints and removes the WAL, if no one else holds the file
parent_closed.set()
print(json.dumps([outcome(process), contents()]))
"""


def test_a_worker_keeps_its_writes_after_the_parent_closes_the_database(tmp_path: Path):
    # The worker's connections took no real lock on the file (SQLite believed the
    # parent's, copied by the fork, were its own), so the parent's close removed the
    # WAL under it, and what it wrote next went to a deleted file.
    done = subprocess.run([sys.executable, "-c", WORKER_OUTLIVING_THE_PARENTS_INSTANCE, str(tmp_path / "m.db")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [
        0, ["the parent's note", "written after the parent closed", "written before the parent closed"]
    ], done.stderr


FORKED_INSIDE_ITS_OWN_TRANSACTION = PRELUDE + """
parent = Mnemosyne(session_id="parent", db_path=db, embedder="none")
parent.remember("the parent's note")

def worker():
    for use in (lambda: Mnemosyne(session_id="worker", db_path=db, embedder="none").remember("x"),
                lambda: parent.remember("y")):
        try:
            use()
            sys.exit(1)
        except StorageError as exc:
            assert "forked while its parent was inside a transaction" in str(exc), exc

with parent._store.snapshot():  # the thread that forks is inside a read: it cannot end first
    process = run(worker)
result = outcome(process)
parent.remember("the parent writes on")
parent.close()
print(json.dumps([result, contents()]))
"""


def test_forking_from_inside_a_transaction_gives_the_worker_a_clear_error(tmp_path: Path):
    done = subprocess.run([sys.executable, "-c", FORKED_INSIDE_ITS_OWN_TRANSACTION, str(tmp_path / "m.db")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [0, ["the parent writes on", "the parent's note"]], done.stderr
    assert diagnose(tmp_path / "m.db").ok


FORKED_DURING_A_BACKFILL = PRELUDE + """
from mnemosyne.testing import FailingEmbedder, HashEmbedder

class SlowEmbedder(HashEmbedder):
    def embed(self, texts):
        time.sleep(0.2)
        return super().embed(texts)

with Mnemosyne(session_id="s", db_path=db, embedder=FailingEmbedder()) as mem:  # stored without vectors
    mem.remember_many([f"note {i} waiting for its vector" for i in range(400)])
parent = Mnemosyne(session_id="s", db_path=db, embedder=SlowEmbedder())  # its backfill thread starts
time.sleep(0.3)  # a pass under way holds the backfill's lock

def worker():
    parent.backfill_vectors()
    parent.remember("the worker's note")

result = outcome(run(worker))
parent.close()
print(json.dumps(result))
"""


def test_a_worker_forked_during_a_backfill_can_use_the_instance_it_inherited(tmp_path: Path):
    # The lock of the parent's backfill pass came along held, and waited for a thread
    # the child does not have.
    done = subprocess.run([sys.executable, "-c", FORKED_DURING_A_BACKFILL, str(tmp_path / "m.db")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == 0, done.stderr
    assert diagnose(tmp_path / "m.db").ok


FORKED_WHILE_A_READ_STAYS_OPEN = PRELUDE + """
import mnemosyne._fork

mnemosyne._fork.FORK_WAIT_S = 0.5  # instead of a minute
parent = Mnemosyne(session_id="parent", db_path=db, embedder="none")
parent.remember_many([f"note {i}" for i in range(10)])
dump_started, stop = threading.Event(), threading.Event()

def export_left_unfinished():  # holds its read snapshot until the dump is closed
    with parent._store.snapshot():
        dump_started.set()
        stop.wait(60)

def worker():
    try:
        Mnemosyne(session_id="worker", db_path=db, embedder="none").remember("x")
    except StorageError as exc:
        assert "forked while its parent was inside a transaction" in str(exc), exc
    else:
        sys.exit(1)

reader = threading.Thread(target=export_left_unfinished)
reader.start()
dump_started.wait()
started = time.monotonic()
result = outcome(run(worker))
waited = time.monotonic() - started
stop.set()
reader.join()
parent.remember("the parent writes on")
parent.close()
print(json.dumps([result, waited < 30, len(contents())]))
"""


def test_a_fork_waits_only_so_long_for_a_read_another_thread_leaves_open(tmp_path: Path):
    done = subprocess.run([sys.executable, "-c", FORKED_WHILE_A_READ_STAYS_OPEN, str(tmp_path / "m.db")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [0, True, 11], done.stderr
    assert "still inside database work" in done.stderr


A_DUMP_BEGUN_IN_A_THREAD_THAT_ENDED = PRELUDE + """
import gc
import mnemosyne._fork

mnemosyne._fork.FORK_WAIT_S = 5.0
parent = Mnemosyne(session_id="parent", db_path=db, embedder="none")
parent.remember_many([f"note {i}" for i in range(50)])
dump = parent._store.iter_dump()  # a generator: its read snapshot lives between items
read = []
begun = threading.Thread(target=lambda: read.append(next(dump)))
begun.start()
begun.join()
del begun
gc.collect()  # the thread's connection is queued for closing...
parent.get_stats()  # ...and the next operation must not close it under the dump
read.extend(dump)  # read on, and closed, in this thread
started = time.monotonic()
worker = run(lambda: Mnemosyne(session_id="worker", db_path=db, embedder="none").remember("x"))
waited = time.monotonic() - started
print(json.dumps([sum(kind == "memory" for kind, _ in read), outcome(worker), waited < 2]))
"""


def test_a_dump_begun_in_a_thread_that_ended_reads_on_elsewhere_and_then_lets_forks_be(tmp_path: Path):
    done = subprocess.run([sys.executable, "-c", A_DUMP_BEGUN_IN_A_THREAD_THAT_ENDED, str(tmp_path / "m.db")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [50, 0, True], done.stderr


def test_no_database_work_begins_between_a_forks_wait_and_the_fork():
    # recall's pool threads never wait for a fork (their callers wait for them from
    # inside a read), but none may begin work while the fork is being made.
    from mnemosyne import _fork

    entered = threading.Event()

    def pool_work() -> None:
        _fork.never_wait_in_this_thread()
        work, token = _fork.here(), object()
        _fork.enter(work, token)
        _fork.leave(work, token)
        entered.set()

    _fork._before_fork()  # as os.fork() calls it; the fork itself would come next
    try:
        worker = threading.Thread(target=pool_work)
        worker.start()
        assert not entered.wait(0.3)
    finally:
        _fork._after_fork_in_parent()
    assert entered.wait(5)
    worker.join()
