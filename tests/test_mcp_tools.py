"""The MCP tool table, called in-process (no SDK): schemas, argument checks, sessions, backups."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np
import pytest

from mnemosyne import InvalidInputError, MemoryNotFoundError, Mnemosyne, StorageError
from mnemosyne.dr.recovery import verify_backup
from mnemosyne.interfaces.mcp_tools import TOOLS, TOOLS_BY_NAME, Sessions, call_tool


@pytest.fixture
def sessions(tmp_path: Path):
    opened = Sessions(tmp_path / "memories.db", default_session="planner")
    yield opened
    opened.close()


def test_every_tool_has_a_usable_schema():
    for spec in TOOLS:
        schema = spec.input_schema()
        assert schema["additionalProperties"] is False
        assert set(schema["required"]) <= set(schema["properties"])
        for name, prop in schema["properties"].items():
            assert prop["description"].strip(), f"{spec.name}.{name} has no description"
            types = prop["type"] if isinstance(prop["type"], list) else [prop["type"]]
            assert set(types) <= {"string", "number", "integer", "boolean", "object", "array"}
        # Every tool takes one: an agent may pass its session on every call.
        assert "session_id" in schema["properties"]
        assert ("whole database" in schema["properties"]["session_id"]["description"]) != spec.per_session


def test_remember_and_recall_through_the_table(sessions: Sessions):
    stored = call_tool(sessions, "remember", {"content": "Font is Inter", "importance": 0.7,
                                              "metadata": {"ticket": 4}, "source": None})
    assert stored["session_id"] == "planner"
    found = call_tool(sessions, "recall", {"query": "which font", "source": ["conversation", "ops"]})
    assert [m["id"] for m in found["memories"]] == [stored["id"]]
    assert found["memories"][0]["metadata"] == {"ticket": 4}


@pytest.mark.parametrize("limit", [0, 1_000_001])
def test_a_timeline_limit_out_of_range_says_what_the_tool_takes(sessions: Sessions, limit: int):
    with pytest.raises(InvalidInputError) as caught:
        call_tool(sessions, "timeline", {"limit": limit})
    assert str(caught.value) == f"limit must be an integer from 1 to 1_000_000, got {limit}"  # not "None"


def test_remember_takes_an_idempotency_key_and_recall_a_context(sessions: Sessions):
    stored = call_tool(sessions, "remember", {"content": "Failover started.", "idempotency_key": "fo-1",
                                              "created_at": "2026-01-05T09:00:00Z"})
    retried = call_tool(sessions, "remember", {"content": "Failover started.", "idempotency_key": "fo-1",
                                               "created_at": "2026-01-05T09:00:00Z"})
    assert retried["id"] == stored["id"]
    with pytest.raises(InvalidInputError, match="idempotency_key"):
        call_tool(sessions, "remember", {"content": "Something else.", "idempotency_key": "fo-1"})
    for minute, text in [(1, "Traffic moved to the standby region."), (2, "Failover finished.")]:
        call_tool(sessions, "remember", {"content": text, "created_at": f"2026-01-05T09:0{minute}:00Z"})
    [hit] = call_tool(sessions, "recall", {"query": "failover started", "top_k": 1, "context": 2})["memories"]
    assert hit["id"] == stored["id"]
    assert [e["content"] for e in hit["context"]] == ["Traffic moved to the standby region.", "Failover finished."]
    assert call_tool(sessions, "recall", {"query": "failover started", "top_k": 1})["memories"][0]["context"] == []
    with pytest.raises(InvalidInputError, match="context must be an integer from 0 to 50"):
        call_tool(sessions, "recall", {"query": "failover", "context": 51})


def test_numbers_from_numpy_are_numbers_and_its_bools_are_not(sessions: Sessions):
    stored = call_tool(sessions, "remember", {"content": "Font is Inter", "importance": np.float32(0.75)})
    found = call_tool(sessions, "recall", {"query": "font", "top_k": np.int64(3)})
    assert [(m["id"], m["importance"]) for m in found["memories"]] == [(stored["id"], 0.75)]
    assert call_tool(sessions, "timeline", {"limit": np.float32(1.0)})["count"] == 1
    with pytest.raises(InvalidInputError, match="JSON type integer"):
        call_tool(sessions, "recall", {"query": "font", "top_k": np.bool_(True)})


@pytest.mark.parametrize(
    ("tool", "arguments", "needle"),
    [
        ("remember", {"content": "x", "importance": 5}, "importance"),
        ("remember", {"content": "x", "importance": "high"}, "JSON type number"),
        ("remember", {"content": "x", "scope": "team"}, "scope"),
        ("remember", {"content": "x", "colour": "red"}, "does not take colour"),
        ("stats", {"colour": "red"}, "stats does not take colour; its arguments are: session_id$"),
        ("sleep", {"session_id": ""}, "session_id must be a non-empty string"),
        ("remember", {}, "needs content"),
        ("recall", {"query": "x", "top_k": True}, "JSON type integer"),
        ("recall", {"query": "x", "top_k": 0}, "top_k"),
        ("update", {"memory_id": "x"}, "at least one"),
        ("backup", {"name": "../../etc/passwd"}, "plain file name"),
        ("backup", {"name": "evil.bak\n"}, "plain file name"),
        ("backup", {"name": "nightly.manifest.json"}, "manifest"),
        ("teleport", {}, "there is no tool"),
    ],
)
def test_bad_arguments_are_invalid_input_and_write_nothing(sessions: Sessions, tool, arguments, needle):
    with pytest.raises(InvalidInputError, match=needle):
        call_tool(sessions, tool, arguments)
    with sessions.use() as mem:
        assert mem.get_stats().total == 0
    assert not (sessions.backup_dir.exists() and any(sessions.backup_dir.iterdir()))


def test_sessions_see_their_own_scope_plus_global(sessions: Sessions):
    private = call_tool(sessions, "remember", {"content": "coder's lexer note", "session_id": "coder"})
    shared = {"content": "shared lexer rule", "scope": "global", "session_id": "coder"}
    call_tool(sessions, "remember", shared)
    other = call_tool(sessions, "recall", {"query": "lexer", "session_id": "reviewer"})
    assert [m["content"] for m in other["memories"]] == ["shared lexer rule"]
    with pytest.raises(MemoryNotFoundError):
        call_tool(sessions, "forget", {"memory_id": private["id"], "session_id": "reviewer"})
    with pytest.raises(InvalidInputError):
        call_tool(sessions, "recall", {"query": "lexer", "session_id": ""})
    # The same database, seen through the public API.
    with Mnemosyne(session_id="coder", db_path=sessions.db_path) as mem:
        assert mem.get(private["id"]) is not None


def test_a_session_id_too_long_is_invalid_input_and_opens_no_session(sessions: Sessions):
    with pytest.raises(InvalidInputError, match="session_id is 1_000_000 characters long"):
        call_tool(sessions, "remember", {"content": "never stored", "session_id": "s" * 1_000_000})
    assert call_tool(sessions, "stats", {})["total"] == 0


def test_backups_get_unique_names_and_never_replace_one(sessions: Sessions):
    call_tool(sessions, "remember", {"content": "worth keeping"})
    first = call_tool(sessions, "backup", {})
    second = call_tool(sessions, "backup", {})
    assert first["backup_path"] != second["backup_path"]
    named = call_tool(sessions, "backup", {"name": "pre-deploy.bak"})
    assert verify_backup(named["backup_path"]).memory_count == 1
    with pytest.raises(InvalidInputError, match="already exists"):
        call_tool(sessions, "backup", {"name": "pre-deploy.bak"})


def test_unnamed_backups_made_at_once_each_get_a_name(sessions: Sessions):
    from concurrent.futures import ThreadPoolExecutor

    call_tool(sessions, "remember", {"content": "worth keeping"})
    with ThreadPoolExecutor(max_workers=8) as pool:  # as a server serves concurrent calls
        made = list(pool.map(lambda _: call_tool(sessions, "backup", {}), range(8)))
    assert len({backup["backup_path"] for backup in made}) == 8
    assert all(verify_backup(backup["backup_path"]).memory_count == 1 for backup in made)


def test_a_backup_never_replaces_another_backups_manifest(sessions: Sessions):
    call_tool(sessions, "remember", {"content": "worth keeping"})
    first = Path(call_tool(sessions, "backup", {"name": "nightly.bak"})["backup_path"])
    # A foreign file where a new backup's manifest would go is not overwritten either.
    squatter = sessions.backup_dir / "weekly.manifest.json"
    squatter.write_text("not ours", encoding="utf-8")
    call_tool(sessions, "remember", {"content": "written after the first backup"})
    with pytest.raises(InvalidInputError, match="already exists"):
        call_tool(sessions, "backup", {"name": "weekly"})
    assert squatter.read_text(encoding="utf-8") == "not ours"
    assert not (sessions.backup_dir / "weekly").exists()
    assert verify_backup(first).memory_count == 1


def test_backup_dir_can_be_chosen(tmp_path: Path):
    sessions = Sessions(tmp_path / "db" / "memories.db", backup_dir=tmp_path / "elsewhere")
    try:
        result = call_tool(sessions, "backup", {"name": "b1.bak"})
    finally:
        sessions.close()
    assert Path(result["backup_path"]) == (tmp_path / "elsewhere" / "b1.bak").resolve()


def test_timeline_and_sleep_through_the_table(sessions: Sessions):
    for minute, text in enumerate(["opened the incident", "failover started", "failover finished"]):
        call_tool(sessions, "remember", {"content": text, "created_at": f"2026-01-05T09:0{minute}:00Z"})
    call_tool(sessions, "remember", {"content": "coder's private note", "session_id": "coder"})
    events = call_tool(sessions, "timeline", {"since": "2026-01-05", "until": "2026-01-06"})
    assert [m["content"] for m in events["memories"]] == [
        "opened the incident", "failover started", "failover finished"]
    assert call_tool(sessions, "timeline", {"limit": 1})["count"] == 1

    planned = call_tool(sessions, "sleep", {"dry_run": True})
    assert planned["dry_run"] is True and planned["summaries"] == 1
    report = call_tool(sessions, "sleep", {})
    assert report["summaries"] == 1 and report["active_after"] < report["active_before"]
    assert call_tool(sessions, "sleep", {})["changed_rows"] == 0
    assert call_tool(sessions, "stats", {})["last_sleep_at"] is not None


@pytest.mark.parametrize("limit", [1, 2])
def test_paging_the_timeline_back_with_next_before_meets_every_event_once(sessions: Sessions, limit: int):
    call_tool(sessions, "remember", {"content": "early", "created_at": "2026-01-01T10:00:00Z"})
    for x in "abc":
        call_tool(sessions, "remember", {"content": f"same time {x}", "created_at": "2026-01-02T10:00:00Z"})
    call_tool(sessions, "remember", {"content": "late", "created_at": "2026-01-03T10:00:00Z"})
    pages, arguments = [], {"limit": limit}
    while len(pages) < 6:
        result = call_tool(sessions, "timeline", arguments)
        pages.append([m["content"] for m in result["memories"]])
        assert result["count"] == len(pages[-1])
        if not result["earlier_left_out"]:
            assert result["next_before"] is None
            break
        arguments = {"limit": limit, "before": result["next_before"]}
    shown = [content for page in reversed(pages) for content in page]
    assert shown == ["early", "same time a", "same time b", "same time c", "late"]  # each once, then done
    assert any({"same time a", "same time b", "same time c"} <= set(page) for page in pages)


def test_sessions_past_the_cap_are_closed_and_reopened_unharmed(tmp_path: Path):
    sessions = Sessions(tmp_path / "memories.db", max_open=3)
    try:
        ids = {}
        for i in range(10):
            note = {"content": f"note of agent {i}", "session_id": f"agent-{i}"}
            ids[f"agent-{i}"] = call_tool(sessions, "remember", note)["id"]
        assert len(sessions._open) == 3  # the files of the other seven were released
        for session_id, memory_id in ids.items():
            found = call_tool(sessions, "recall", {"query": "note of agent", "session_id": session_id})
            assert [m["id"] for m in found["memories"]] == [memory_id]
        with sessions.use("busy") as busy:  # one in use is never closed under its caller
            for i in range(5):
                call_tool(sessions, "timeline", {"session_id": f"other-{i}"})
            assert busy.remember("still open") is not None
    finally:
        sessions.close()


def open_files_of(path: Path) -> int:
    """How many file descriptors of this process hold ``path`` open."""
    return sum(1 for fd in Path("/proc/self/fd").iterdir() if os.path.realpath(fd) == str(path.resolve()))


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts open files through /proc")
def test_every_session_shares_one_open_database(tmp_path: Path):
    # An instance per session held a connection per thread that ran its calls (a
    # server's pool runs them on many) and a vector index each: a burst of calls
    # over 16 sessions ran the server out of open files.
    db = tmp_path / "memories.db"
    sessions = Sessions(db, default_session="planner")
    try:
        held = []
        for i in range(12):
            call_tool(sessions, "remember", {"content": f"note of agent {i}", "session_id": f"agent-{i}"})
            found = call_tool(sessions, "recall", {"query": f"note of agent {i}", "session_id": f"agent-{i}"})
            assert [m["content"] for m in found["memories"]] == [f"note of agent {i}"]  # still its own view
            held.append(open_files_of(db))
        # A connection (one descriptor of the file) per thread that ran the calls (this
        # one, recall's helpers; one just ended at most), however many sessions.
        assert max(held) <= threading.active_count() + 1
    finally:
        sessions.close()
    assert open_files_of(db) == 0


def test_schemas_say_what_the_server_accepts(sessions: Sessions):
    recall = TOOLS_BY_NAME["recall"].input_schema()["properties"]["top_k"]
    assert recall["maximum"] == 10_000
    with pytest.raises(InvalidInputError, match="top_k"):
        call_tool(sessions, "recall", {"query": "x", "top_k": recall["maximum"] + 1})
    call_tool(sessions, "remember", {"content": "two point oh"})
    assert len(call_tool(sessions, "recall", {"query": "two point", "top_k": 2.0})["memories"]) == 1
    with pytest.raises(InvalidInputError, match="integer"):
        call_tool(sessions, "recall", {"query": "x", "top_k": 2.5})


def test_unnamed_backups_from_two_servers_at_once_each_get_a_name(tmp_path: Path):
    import subprocess
    import sys

    db = tmp_path / "memories.db"
    with Mnemosyne(db_path=db, embedder="none") as mem:
        mem.remember("worth keeping")
    server = (
        "import sys\nfrom mnemosyne.interfaces.mcp_tools import Sessions, call_tool\n"
        "sessions = Sessions(sys.argv[1], default_session='ops')\n"
        "for _ in range(6):\n    print(call_tool(sessions, 'backup', {})['backup_path'])\n"
        "sessions.close()\n"
    )
    servers = [subprocess.Popen([sys.executable, "-c", server, str(db)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True) for _ in range(2)]
    made = []
    for process in servers:
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
        made += out.split()
    assert len(made) == len(set(made)) == 12
    assert all(verify_backup(path).memory_count == 1 for path in made)


def test_a_database_deleted_under_the_server_refuses_every_session_and_is_not_recreated(tmp_path: Path):
    db = tmp_path / "memories.db"
    sessions = Sessions(db, default_session="planner")
    try:
        call_tool(sessions, "remember", {"content": "The font is Inter"})
        for path in tmp_path.glob("memories.db*"):
            path.unlink()
        for session in (None, "newcomer"):  # one already open, one never seen
            with pytest.raises(StorageError, match="restart the server"):
                call_tool(sessions, "recall", {"query": "font", **({"session_id": session} if session else {})})
        assert not db.exists()
    finally:
        sessions.close()


def test_every_session_opens_the_file_the_server_started_with(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path)
    sessions = Sessions("memories.db", default_session="planner")
    try:
        call_tool(sessions, "remember", {"content": "The font is Inter", "scope": "global"})
        monkeypatch.chdir(tmp_path / "elsewhere")  # a relative --db, and the working directory moves
        found = call_tool(sessions, "recall", {"query": "font", "session_id": "newcomer"})
        assert [m["content"] for m in found["memories"]] == ["The font is Inter"]
        assert not (tmp_path / "elsewhere" / "memories.db").exists()
    finally:
        sessions.close()


@pytest.mark.parametrize("path", ["new/memories.db/", "new/"])
def test_a_db_path_ending_in_a_separator_names_a_folder_and_is_refused(tmp_path: Path, path: str):
    with pytest.raises(InvalidInputError, match="names a directory"):
        Sessions(f"{tmp_path}/{path}")
    assert not (tmp_path / "new").exists()


def test_the_tools_over_the_whole_database_take_the_callers_session_id(sessions: Sessions):
    call_tool(sessions, "remember", {"content": "coder's lexer note", "session_id": "coder"})
    call_tool(sessions, "remember", {"content": "planner's roadmap note"})
    assert call_tool(sessions, "stats", {"session_id": "coder"}) == call_tool(sessions, "stats", {})
    assert call_tool(sessions, "stats", {"session_id": "coder"})["total"] == 2  # every session's
    planned = call_tool(sessions, "sleep", {"session_id": "coder", "dry_run": True})
    assert planned["dry_run"] is True and planned["active_before"] == 2
    made = call_tool(sessions, "backup", {"session_id": "coder", "name": "coder.bak"})
    assert made["memory_count"] == 2 and verify_backup(made["backup_path"]).memory_count == 2


def test_the_timeline_tool_returns_the_latest_events_and_says_earlier_ones_were_left_out(sessions: Sessions):
    for minute in range(5):
        call_tool(sessions, "remember", {"content": f"step {minute}", "created_at": f"2026-01-05T09:0{minute}:00Z"})
    cut = call_tool(sessions, "timeline", {"limit": 2})
    assert [m["content"] for m in cut["memories"]] == ["step 3", "step 4"] and cut["earlier_left_out"] is True
    whole = call_tool(sessions, "timeline", {"limit": 5})
    assert whole["count"] == 5 and whole["earlier_left_out"] is False
