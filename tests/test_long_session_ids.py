"""Session ids over 256 characters, which earlier releases took.

A new session may not have one, but a session an earlier release stored under one
still opens after an upgrade: otherwise its private memories would be out of reach
of every call.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from mnemosyne import InvalidInputError, Mnemosyne
from mnemosyne.interfaces.cli import EXIT_OK, main
from mnemosyne.interfaces.mcp_tools import Sessions, call_tool

pytestmark = pytest.mark.usefixtures("lexical_only")  # sessions, not ranking: no model

# As agents built them from a URL or a prompt.
LONG_ID = "agent:https://example.com/" + "x" * 274
PRIVATE = "private note about the otter enclosure"
GLOBAL = "global note about the otter feeding times"


def stored_by_an_earlier_release(db: Path, session_id: str = LONG_ID) -> Path:
    """A database holding ``session_id``'s memories and episode, written as an earlier
    release (which took any length) wrote them: rows of a short session renamed."""
    with Mnemosyne(session_id="placeholder", db_path=db) as mem:
        with mem.episode("otter shift"):
            mem.remember(PRIVATE)
        mem.remember(GLOBAL, scope="global")
    with closing(sqlite3.connect(db)) as conn, conn:
        for table in ("memories", "episodes"):
            conn.execute(f"UPDATE {table} SET session_id = ?", (session_id,))
    return db


def files_of(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir()}


def test_a_session_an_earlier_release_stored_under_a_long_id_opens_and_everything_works(tmp_path: Path):
    db = stored_by_an_earlier_release(tmp_path / "old.db")
    with Mnemosyne(session_id=LONG_ID, db_path=db) as mem:
        assert [m.content for m in mem.recall("otter enclosure", top_k=1)] == [PRIVATE]
        assert {m.content for m in mem.timeline()} == {PRIVATE, GLOBAL}
        assert "otter shift" in [e.label for e in mem.episodes()]
        new = mem.remember("a newer note about the otter pool")
        assert mem.get(new).session_id == LONG_ID
        mem.sleep()
        assert mem.export_jsonl(tmp_path / "out.jsonl") == 3
        mem.forget(new)
        assert mem.get(new) is None
    with Mnemosyne(session_id="other", db_path=db) as other:
        # Another session reads the long session's history, its global memory only.
        assert [m.content for m in other.timeline(session_id=LONG_ID)] == [GLOBAL]
        assert [e.size for e in other.episodes(session_id=LONG_ID)] == [1]


def test_only_the_exact_long_id_the_database_holds_opens_and_a_refusal_changes_no_file(tmp_path: Path):
    db = stored_by_an_earlier_release(tmp_path / "old.db")
    before = files_of(tmp_path)
    for unknown in (LONG_ID + "x", LONG_ID[:-1] + "y", "s" * 1_000_000):
        with pytest.raises(InvalidInputError, match="characters long; the most is 256") as refused:
            Mnemosyne(session_id=unknown, db_path=db)
        assert len(str(refused.value)) < 300
    assert files_of(tmp_path) == before  # no -wal or -shm left, no migration, no write
    with pytest.raises(InvalidInputError, match="the most is 256"):
        Mnemosyne(session_id=LONG_ID, db_path=tmp_path / "new" / "memories.db")
    assert files_of(tmp_path) == before  # no new database, no new folder
    with Mnemosyne(session_id=LONG_ID, db_path=db) as mem:
        assert mem.session_id == LONG_ID


def test_the_limit_binds_new_sessions_only(tmp_path: Path):
    db = stored_by_an_earlier_release(tmp_path / "old.db", session_id="s" * 257)
    with Mnemosyne(session_id="n" * 256, db_path=db) as longest_new:
        longest_new.remember("the longest new session id still opens")
    with pytest.raises(InvalidInputError, match="session_id is 257 characters long; the most is 256"):
        Mnemosyne(session_id="n" * 257, db_path=db)
    with Mnemosyne(session_id="s" * 257, db_path=db) as held:
        assert [m.content for m in held.recall("otter enclosure", top_k=1)] == [PRIVATE]
        with pytest.raises(InvalidInputError, match="session_id is 257 characters long"):
            held.timeline(session_id="n" * 257)


def test_a_long_session_that_only_opened_an_episode_opens(tmp_path: Path):
    db = tmp_path / "old.db"
    with Mnemosyne(session_id="placeholder", db_path=db) as mem:
        with mem.episode("planning that stored nothing"):
            pass
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("UPDATE episodes SET session_id = ?", (LONG_ID,))
    with Mnemosyne(session_id=LONG_ID, db_path=db) as mem:
        assert mem.remember("the plan, at last") is not None


def test_the_command_line_and_the_mcp_tools_open_a_long_session_the_database_holds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    db = stored_by_an_earlier_release(tmp_path / "old.db")
    code = main(["recall", "otter enclosure", "--db", str(db), "--session", LONG_ID, "--json"])
    assert code == EXIT_OK
    assert [m["content"] for m in json.loads(capsys.readouterr().out)][0] == PRIVATE
    sessions = Sessions(db, default_session="planner")
    try:
        found = call_tool(sessions, "recall", {"query": "otter enclosure", "session_id": LONG_ID})
        assert found["memories"][0]["content"] == PRIVATE
        with pytest.raises(InvalidInputError, match="the most is 256"):
            call_tool(sessions, "recall", {"query": "otter", "session_id": LONG_ID + "x"})
    finally:
        sessions.close()


def test_an_export_with_a_long_session_id_imports_and_its_session_opens_there(tmp_path: Path):
    db = stored_by_an_earlier_release(tmp_path / "old.db")
    export = tmp_path / "old.jsonl"
    with Mnemosyne(session_id="other", db_path=db) as mem:
        mem.export_jsonl(export)
    fresh = tmp_path / "fresh.db"
    with Mnemosyne(session_id="other", db_path=fresh) as mem:
        assert mem.import_jsonl(export) == 2
    with Mnemosyne(session_id=LONG_ID, db_path=fresh) as mem:
        assert [m.content for m in mem.recall("otter enclosure", top_k=1)] == [PRIVATE]
        assert "otter shift" in [e.label for e in mem.episodes()]


def test_a_long_session_that_forgot_everything_it_had_still_opens(tmp_path: Path):
    db = stored_by_an_earlier_release(tmp_path / "old.db")
    with Mnemosyne(session_id=LONG_ID, db_path=db) as mem:
        for memory in mem.timeline():
            mem.forget(memory.id)
        assert mem.timeline() == []
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("DELETE FROM episodes")  # nothing of the session is left but its history
    with Mnemosyne(session_id=LONG_ID, db_path=db) as mem:
        assert mem.get(mem.remember("starting over")).session_id == LONG_ID
