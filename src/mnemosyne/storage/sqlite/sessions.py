"""Whether a database already holds a session.

Asked of a session id longer than a new session may be: earlier releases took ids of
any length, and the sessions they stored must still open. The question may come
before the database is opened, so it is answered without creating, migrating or
changing any file.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ...core.validation import expand_user
from .driver_errors import translate
from .file_names import refuse_leftover_wal, refuse_other_names


def session_is_stored(conn: sqlite3.Connection, session_id: str) -> bool:
    """Whether memories or explicit episodes of ``session_id`` are stored, or the
    audit log records it (a session whose every memory was forgotten).

    The memories' session index answers at once; episodes and the audit log (not
    indexed by session) are read only when no memory is found, which is rare: a
    session that opened an episode and remembered nothing, or forgot all it had.
    """
    if _has_table(conn, "memories") and _found(conn, "memories", session_id):
        return True
    # Schemas before 3 have no episodes table.
    return any(_has_table(conn, table) and _found(conn, table, session_id) for table in ("episodes", "audit_log"))


def file_holds_session(path: str | Path, session_id: str, busy_timeout: float) -> bool:
    """Whether the database file at ``path`` holds ``session_id``; False where no
    database file is (nothing is created there).

    >>> file_holds_session("memories.db", "a session id of 300 characters...", 60.0)
    False
    """
    if not isinstance(path, (str, Path)) or str(path) == ":memory:":
        return False  # no file could hold it; opening the store says what is wrong with the path
    file = expand_user(path, "db_path")
    if not file.is_file():
        return False
    refuse_other_names(file)  # a read by a second name would miss the writers' log, and close it
    refuse_leftover_wal(file)  # opening an empty file deletes the -wal beside it
    # Read-write though it only reads: closing last, it removes the -wal and -shm
    # files reading a WAL database makes, which a read-only connection leaves behind.
    # mode=rw never creates the file.
    uri = file.resolve().as_uri() + "?mode=rw"
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=busy_timeout)
        try:
            return session_is_stored(conn, session_id)
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise translate(exc, file, "look up the session in the database") from exc


def _has_table(conn: sqlite3.Connection, name: str) -> bool:
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone()
    return row is not None


def _found(conn: sqlite3.Connection, table: str, session_id: str) -> bool:
    row = conn.execute(f"SELECT 1 FROM {table} WHERE session_id = ? LIMIT 1", (session_id,)).fetchone()
    return row is not None
