"""Reading a whole database back, for tests that compare two of them."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from mnemosyne import Mnemosyne


def snapshot(db: Path) -> dict[str, dict[str, Any]]:
    """Every memory in ``db`` as ``to_dict()``, each read through its own session."""
    conn = sqlite3.connect(db)
    try:
        owners = conn.execute("SELECT id, session_id FROM memories").fetchall()
    finally:
        conn.close()
    result = {}
    for session in {session for _, session in owners}:
        with Mnemosyne(session_id=session, db_path=db) as mem:
            for memory_id, owner in owners:
                if owner == session:
                    result[memory_id] = mem.get(memory_id).to_dict()
    return result
