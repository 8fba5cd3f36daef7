"""``mnemosyne mcp``: Mnemosyne as a Model Context Protocol server.

    mnemosyne mcp --db ~/memories.db --session my-agent            # stdio (default)
    mnemosyne mcp --db ~/memories.db --http --host 127.0.0.1 --port 8765

The tools are the table in :mod:`mnemosyne.interfaces.mcp_tools`. Each call runs
the synchronous core on a worker thread (the SDK owns the only event loop). A
Mnemosyne error comes back as a tool error whose text is
``{"error": {"code": ..., "message": ...}}``; nothing else about the server's
internals (no stack trace) reaches the client.
"""

from __future__ import annotations

import errno
import functools
import json
import logging
import os
import signal
import socket
import sys
import threading
from pathlib import Path
from typing import Any

from mnemosyne.errors import MissingDependencyError

try:
    import anyio
    import anyio.to_thread
    from mcp import types
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server
except ImportError as exc:  # the optional extra is not installed
    raise MissingDependencyError("the MCP server (mnemosyne mcp)", "mcp") from exc

from mnemosyne import MnemosyneError, __version__

from .mcp_tools import TOOLS, Sessions, ToolSpec, call_tool

logger = logging.getLogger("mnemosyne.mcp")

INSTRUCTIONS = (
    "Mnemosyne is durable memory that survives restarts. At the start of a task, recall "
    "what is relevant (e.g. 'progress and next steps'). While working, remember decisions, "
    "facts, progress and next steps as self-contained sentences, with an importance from 0 "
    "to 1. Use scope 'global' for knowledge every agent should share and 'session' for this "
    "session's working context."
)


def build_server(sessions: Sessions) -> Server[Any]:
    """The MCP server object (transport-independent) over ``sessions``."""
    tools = [_describe(spec) for spec in TOOLS]

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        run = functools.partial(call_tool, sessions, params.name, params.arguments)
        try:
            result = await anyio.to_thread.run_sync(run)
        except MnemosyneError as exc:
            return _error(exc.code, str(exc))
        except Exception as exc:
            # A bug, not a user error: full details go to the server's log (stderr),
            # the client gets the kind of failure only.
            logger.exception("tool %s failed unexpectedly", params.name)
            message = f"{params.name} failed unexpectedly ({type(exc).__name__}); see the server log"
            return _error("internal_error", message)
        return types.CallToolResult(content=[_text(result)], structured_content=result)

    return Server(
        "mnemosyne", version=__version__, instructions=INSTRUCTIONS,
        on_list_tools=list_tools, on_call_tool=on_call_tool,
    )


def serve(
    db_path: str | Path | None = None,
    session_id: str = "default",
    *,
    http: bool = False,
    host: str = "127.0.0.1",
    port: int = 8765,
    backup_dir: str | Path | None = None,
) -> None:
    """Serve until the client disconnects (stdio) or the process is interrupted (HTTP).

    >>> serve("memories.db", "planner")                      # stdio, for an MCP client to spawn
    >>> serve("memories.db", http=True, port=8765)           # http://127.0.0.1:8765/mcp
    """
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="mnemosyne mcp: %(message)s")
    sessions = Sessions(db_path, session_id, backup_dir)
    # Open the default session now: a bad --db or --session fails before any client connects.
    with sessions.use() as mem:
        served = mem.db_path
    server = build_server(sessions)
    if threading.current_thread() is threading.main_thread():
        # A stop request (docker stop, systemd) must not lose the recall counts still
        # buffered: they are written before the process ends.
        stop = functools.partial(_stop_requested, sessions, http)
        signal.signal(signal.SIGTERM, stop)
        if not http:  # Ctrl-C too: KeyboardInterrupt would wait for the thread reading stdin
            signal.signal(signal.SIGINT, stop)
    try:
        if http:
            if host not in ("127.0.0.1", "localhost", "::1"):
                logger.warning("listening on %s without authentication: anyone who can reach it can read "
                               "and change every memory", host)
            address = f"[{host}]" if ":" in host else host  # an IPv6 literal, as a URL writes it
            listeners = _listen(host, port, address)
            print(f"mnemosyne mcp: serving {served} at http://{address}:{port}/mcp", file=sys.stderr)
            anyio.run(_serve_http, server, host, listeners)
        else:
            anyio.run(_serve_stdio, server)
    except KeyboardInterrupt:
        pass
    finally:
        sessions.close()


def _stop_requested(sessions: Sessions, http: bool, signum: int, frame: object) -> None:
    if http:
        # uvicorn stopped serving gracefully, then passed the signal on: end as Ctrl-C
        # does, through serve()'s finally.
        raise KeyboardInterrupt
    # Over stdio, a thread blocked reading stdin would hold the process until the
    # client hangs up: close the databases (their calls under way roll back) and go.
    try:
        sessions.close()
    finally:
        os._exit(128 + signum if signum == signal.SIGINT else 0)  # Ctrl-C ends as the CLI's does


async def _serve_stdio(server: Server[Any]) -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def _listen(host: str, port: int, address: str) -> list[socket.socket]:
    """Sockets bound to every address ``host`` names, bound before the server says it
    serves: a port already taken is then an error, never after a line announcing a
    server that is not there."""
    listeners: list[socket.socket] = []
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        for family, kind, protocol, _, where in dict.fromkeys(found):
            listener = socket.socket(family, kind, protocol)
            listeners.append(listener)
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
            if family == socket.AF_INET6:  # 'localhost' may name ::1 and 127.0.0.1: bind each
                listener.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            listener.bind(where)
    except OSError as exc:
        for listener in listeners:
            listener.close()
        hint = "; another server has that port: choose another with --port" if exc.errno == errno.EADDRINUSE else ""
        raise OSError(f"cannot serve at {address}:{port}: {exc.strerror or exc}{hint}") from exc
    return listeners


async def _serve_http(server: Server[Any], host: str, listeners: list[socket.socket]) -> None:
    import uvicorn  # a dependency of the mcp SDK

    app = server.streamable_http_app(host=host)
    config = uvicorn.Config(app, host=host, log_level="warning")
    await uvicorn.Server(config).serve(sockets=listeners)


def _describe(spec: ToolSpec) -> types.Tool:
    return types.Tool(
        name=spec.name,
        description=spec.description,
        input_schema=spec.input_schema(),
        annotations=types.ToolAnnotations(
            read_only_hint=spec.read_only,
            destructive_hint=spec.destructive,
            open_world_hint=False,
        ),
    )


def _text(data: Any) -> types.TextContent:
    return types.TextContent(type="text", text=json.dumps(data, ensure_ascii=False, default=str))


def _error(code: str, message: str) -> types.CallToolResult:
    error = {"error": {"code": code, "message": message}}
    return types.CallToolResult(content=[_text(error)], structured_content=error, is_error=True)
