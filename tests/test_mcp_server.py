"""The MCP server, driven by the SDK's real client: over stdio and over streamable HTTP.

The server runs as a real subprocess (``python -m mnemosyne mcp``) on a real SQLite
file; the client is ``mcp.Client``, as an agent framework would use it.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from mnemosyne import Mnemosyne

TOOL_NAMES = {"remember", "recall", "get", "update", "forget", "timeline", "sleep", "stats", "backup"}


def server_command(db: Path, *extra: str) -> list[str]:
    return ["-m", "mnemosyne", "mcp", "--db", str(db), *extra]


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    data = json.loads(result.content[0].text)
    assert result.structured_content == data
    assert bool(result.is_error) == ("error" in data), data
    return data


async def exercise(client: Client) -> None:
    """What every transport must do: list, remember, recall, refuse bad input."""
    listed = (await client.list_tools()).tools
    assert {tool.name for tool in listed} == TOOL_NAMES
    for tool in listed:
        assert tool.description and len(tool.description) > 40
        schema = tool.input_schema
        assert schema["type"] == "object" and set(schema["required"]) <= set(schema["properties"])
        assert all(prop.get("description") for prop in schema["properties"].values()), tool.name

    stored = await call(client, "remember", content="Next step: implement the responsive navigation.",
                        source="task-tracker", importance=0.8)
    found = await call(client, "recall", query="next step navigation", top_k=5)
    assert found["count"] == 1
    assert found["memories"][0]["id"] == stored["id"]
    assert found["memories"][0]["content"] == "Next step: implement the responsive navigation."
    assert found["memories"][0]["importance"] == 0.8

    bad = await call(client, "remember", content="too important", importance=5)
    assert bad["error"]["code"] == "invalid_input"
    assert "importance" in bad["error"]["message"]
    assert "Traceback" not in json.dumps(bad)
    assert (await call(client, "recall", query="too important"))["count"] == 0  # nothing was written


def test_stdio_tools_errors_and_session_isolation(tmp_path: Path):
    db = tmp_path / "memories.db"
    # This process's environment (the client passes on only a few variables by itself): the
    # server must run the code under test, wherever PYTHONPATH points.
    params = StdioServerParameters(
        command=sys.executable, args=server_command(db, "--session", "planner"), cwd=str(tmp_path),
        env=os.environ.copy(),
    )

    async def main() -> None:
        with anyio.fail_after(60):
            async with Client(params) as client:
                await exercise(client)

                # Two agents, one database: each sees its own session scope plus global.
                await call(client, "remember", content="Coder's scratch note about the lexer.",
                           session_id="coder")
                await call(client, "remember", content="Shared rule: the lexer is hand-written.",
                           session_id="coder", scope="global")
                coder = await call(client, "recall", query="lexer", session_id="coder")
                reviewer = await call(client, "recall", query="lexer", session_id="reviewer")
                assert coder["count"] == 2
                assert [m["content"] for m in reviewer["memories"]] == [
                    "Shared rule: the lexer is hand-written."]

                # The default session is the one given on the command line.
                planner_note = await call(client, "remember", content="Planner's private plan.")
                assert planner_note["session_id"] == "planner"
                hidden = await call(client, "get", memory_id=planner_note["id"], session_id="coder")
                assert hidden["error"]["code"] == "not_found"
                note_id = planner_note["id"]
                assert (await call(client, "get", memory_id=note_id))["memory"]["session_id"] == "planner"

                updated = await call(client, "update", memory_id=note_id, importance=0.9)
                assert updated["memory"]["importance"] == 0.9
                assert (await call(client, "forget", memory_id=note_id))["forgotten"] == note_id
                assert (await call(client, "get", memory_id=note_id))["error"]["code"] == "not_found"

                stats = await call(client, "stats")
                assert stats["total"] == 3 and stats["by_session"] == {"planner": 1, "coder": 2}
                unknown = await call(client, "recall", query="x", top_k="ten")
                assert unknown["error"]["code"] == "invalid_input"

                backup = await call(client, "backup")
                assert backup["memory_count"] == 3
                assert Path(backup["backup_path"]).parent == tmp_path / "backups"

                # A retried write with its key is stored once; a recall can bring each hit's
                # neighbouring events along.
                first = await call(client, "remember", content="Failover started.", idempotency_key="fo-1",
                                   session_id="oncall", created_at="2026-01-05T09:00:00Z")
                again = await call(client, "remember", content="Failover started.", idempotency_key="fo-1",
                                   session_id="oncall", created_at="2026-01-05T09:00:00Z")
                assert again["id"] == first["id"]
                await call(client, "remember", content="Traffic moved to the standby region.",
                           session_id="oncall", created_at="2026-01-05T09:05:00Z")
                hit = (await call(client, "recall", query="failover", top_k=1, context=1,
                                  session_id="oncall"))["memories"][0]
                assert hit["id"] == first["id"]
                assert [event["content"] for event in hit["context"]] == ["Traffic moved to the standby region."]

    anyio.run(main)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, process: subprocess.Popen, timeout: float = 30, host: str = "127.0.0.1") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            log = process.stderr.read() if process.stderr else ""
            raise AssertionError(f"server exited early: {log!r}")
        try:
            socket.create_connection((host, port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"server did not listen on {port} within {timeout}s")


def test_streamable_http(tmp_path: Path):
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, *server_command(tmp_path / "memories.db", "--http", "--host", "127.0.0.1",
                                         "--port", str(port))],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=tmp_path, env=os.environ.copy(),
    )
    try:
        wait_for_port(port, process)

        async def main() -> None:
            with anyio.fail_after(60):
                async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                    await exercise(client)
                # A second client (another agent) sees what the first stored globally.
                async with Client(f"http://127.0.0.1:{port}/mcp") as first:
                    await call(first, "remember", content="Deploy window is Friday 18:00 UTC.",
                               scope="global", session_id="ops")
                async with Client(f"http://127.0.0.1:{port}/mcp") as second:
                    seen = await call(second, "recall", query="deploy window", session_id="planner")
                    assert [m["content"] for m in seen["memories"]] == ["Deploy window is Friday 18:00 UTC."]

        anyio.run(main)
    finally:
        process.send_signal(signal.SIGTERM)  # how docker and systemd stop a server
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    assert process.returncode == 0, process.stderr.read().decode() if process.stderr else ""
    # A clean stop: the recall counts it held in memory were written.
    with Mnemosyne(session_id="planner", db_path=tmp_path / "memories.db", embedder="none") as mem:
        window = next(m for m in mem.timeline(session_id="ops") if m.content.startswith("Deploy window"))
        assert window.access_count >= 1


def test_the_address_an_http_server_prints_is_one_a_client_can_use(tmp_path: Path):
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        pytest.skip("this machine has no IPv6 loopback")
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, *server_command(tmp_path / "memories.db", "--http", "--host", "::1", "--port", str(port))],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=os.environ.copy(),
    )
    try:
        assert process.stderr is not None
        url = process.stderr.readline().split(" at ")[-1].strip()
        assert url == f"http://[::1]:{port}/mcp"
        wait_for_port(port, process, host="::1")

        async def main() -> None:
            with anyio.fail_after(60):
                async with Client(url) as client:
                    assert await call(client, "stats")

        anyio.run(main)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=15)


def test_an_http_server_whose_port_is_taken_says_so_and_never_that_it_serves(tmp_path: Path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        finished = subprocess.run(
            [sys.executable, *server_command(tmp_path / "memories.db", "--http", "--port", str(port))],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, env=os.environ.copy(),
        )
    assert finished.returncode == 3, finished.stderr
    assert "serving" not in finished.stderr
    assert f"cannot serve at 127.0.0.1:{port}" in finished.stderr and "--port" in finished.stderr


def test_a_db_path_ending_in_a_separator_is_refused_and_creates_nothing(tmp_path: Path):
    finished = subprocess.run(
        [sys.executable, "-m", "mnemosyne", "mcp", "--db", f"{tmp_path}/new/memories.db/"],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, env=os.environ.copy(),
    )
    assert finished.returncode == 2, finished.stderr
    assert "names a directory" in finished.stderr and "Traceback" not in finished.stderr
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize(("stop", "exit_code"), [(signal.SIGTERM, 0), (signal.SIGINT, 130)])
def test_a_stdio_server_stops_at_sigterm_or_ctrl_c_with_its_client_connected(tmp_path: Path, stop, exit_code):
    db = tmp_path / "memories.db"
    process = subprocess.Popen([sys.executable, *server_command(db)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=os.environ.copy())

    def send(message: dict[str, Any]) -> None:
        assert process.stdin is not None
        process.stdin.write((json.dumps({"jsonrpc": "2.0", **message}) + "\n").encode())
        process.stdin.flush()

    def answer() -> dict[str, Any]:
        assert process.stdout is not None
        return json.loads(process.stdout.readline())

    try:
        send({"id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}})
        assert "result" in answer()
        send({"method": "notifications/initialized"})
        for number, (tool, arguments) in enumerate(
            [("remember", {"content": "The deploy window is Friday"}), ("recall", {"query": "deploy window"})], 2
        ):
            send({"id": number, "method": "tools/call", "params": {"name": tool, "arguments": arguments}})
            assert "result" in answer()
        process.send_signal(stop)  # the client is still connected: stdin stays open
        assert process.wait(timeout=15) == exit_code
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    with Mnemosyne(db_path=db, embedder="none") as mem:
        assert [m.access_count for m in mem.timeline(session_id="default")] == [1]
