"""The write-ahead log stays small under sustained writes while reads never stop."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from mnemosyne.storage.sqlite.connection import Database

MB = 2**20
# Twice the size at which a commit restarts the log (wal_size.RESTART_AT_BYTES).
BOUND = 64 * MB
# The writes below log three times the bound, all of which a starved log keeps.
ROW_BYTES = MB // 4
WRITES = 3 * BOUND // ROW_BYTES
# What the log file is cut back to once it starts over (wal_size.KEPT_BYTES).
KEPT = 4 * MB


def wal_size(db: Path) -> int:
    try:
        return os.stat(f"{db}-wal").st_size
    except FileNotFoundError:
        return 0


def test_log_stays_bounded_while_overlapping_reads_never_stop(tmp_path: Path):
    db_path = tmp_path / "m.db"
    db = Database(db_path)
    db.prepare()
    with db.write() as conn:
        conn.execute("CREATE TABLE blobs (id INTEGER PRIMARY KEY, data BLOB)")
    writing = threading.Event()
    writing.set()
    largest = 0

    def read_continuously(offset: float) -> None:
        # Two readers, each holding its snapshot a few milliseconds and starting
        # again at once, out of step: at every moment at least one read is open.
        time.sleep(offset)
        while writing.is_set():
            with db.read() as conn:
                conn.execute("SELECT count(*) FROM blobs").fetchone()
                time.sleep(0.004)

    readers = [threading.Thread(target=read_continuously, args=(i * 0.002,)) for i in range(2)]
    for reader in readers:
        reader.start()
    try:
        for i in range(WRITES):
            with db.write() as conn:
                conn.execute("INSERT INTO blobs (data) VALUES (?)", (os.urandom(ROW_BYTES),))
            if i % 4 == 0:
                largest = max(largest, wal_size(db_path))
    finally:
        writing.clear()
        for reader in readers:
            reader.join()
    assert largest < BOUND
    # Load over: the next writes start the log over and cut the file back (it is
    # not left at its largest until the database is closed).
    for _ in range(3):
        with db.write() as conn:
            conn.execute("INSERT INTO blobs (data) VALUES (x'00')")
    assert wal_size(db_path) <= KEPT
    db.close()
