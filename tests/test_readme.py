"""The README's tour runs as written, and its MCP configuration blocks are valid.

Markers (HTML comments, invisible on GitHub) say which blocks are checked:

- ``<!-- test: run -->`` before a ```python or ```sh block: run it in a fresh
  process, in order with the other marked blocks, each in its own process as after
  a restart. ``<!-- test: run; tmp /some/path -->`` also replaces that literal path,
  and only that one, with a temporary folder (so the test never writes to it).
- ``<!-- test: output -->`` before a ```text block: every line of it must appear
  in what the previous run block printed.
- ``<!-- test: mcp-config -->`` before a ```json block: a valid ``mcpServers`` entry.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from mnemosyne import MnemosyneError
from mnemosyne.interfaces.cli import build_parser
from mnemosyne.interfaces.mcp_tools import TOOLS, Sessions, call_tool

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCK = re.compile(r"<!-- test: (?P<marker>[^>]*?) -->\s*\n```(?P<lang>\w+)\n(?P<body>.*?)\n```", re.S)


@dataclass
class Block:
    marker: str
    lang: str
    body: str


def marked_blocks() -> list[Block]:
    text = README.read_text(encoding="utf-8")
    return [Block(m["marker"].strip(), m["lang"], m["body"]) for m in BLOCK.finditer(text)]


def test_the_two_fresh_machine_commands_are_first():
    text = README.read_text(encoding="utf-8")
    commands = re.findall(r"```sh\n(.*?)\n```", text, re.S)[:2]
    assert commands[0].startswith("python3 -m venv .venv && .venv/bin/pip install -q -e '.[local]'")
    assert commands[1] == (
        "python3 -m venv .venv && .venv/bin/pip install -q -e '.[dev,local,mcp]' && "
        ".venv/bin/python -m pytest -q"
    )


def test_the_tour_runs(tmp_path: Path):
    blocks = marked_blocks()
    runs = [b for b in blocks if b.marker.startswith("run")]
    assert len(runs) >= 5, "the tour lost its runnable blocks"
    # The installed `mnemosyne` command of this interpreter comes first on PATH.
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    printed = ""
    for number, block in enumerate(blocks):
        if block.marker.startswith("run"):
            body = block.body
            fields = [part.strip() for part in block.marker.split(";")[1:]]
            for field in fields:
                key, _, value = field.partition(" ")
                assert key == "tmp", f"unknown marker field {field!r}"
                body = body.replace(value, str(tmp_path / "tour"))
            assert "/tmp/mnemosyne-tour" not in body, f"block {number} would write outside the test's folder"
            if block.lang == "python":
                command = [sys.executable, "-c", body]
            else:
                command = ["bash", "-euo", "pipefail", "-c", body]
            result = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=tmp_path,
                                    env=env)
            assert result.returncode == 0, f"README block {number} failed:\n{body}\n{result.stderr}"
            printed = result.stdout
        elif block.marker == "output":
            for line in filter(None, block.body.splitlines()):
                assert line in printed, f"README promises {line!r}; the block printed:\n{printed}"


def test_mcp_configuration_blocks_start_the_server_they_name():
    configs = [json.loads(b.body) for b in marked_blocks() if b.marker == "mcp-config"]
    assert configs, "the README lost its MCP configuration"
    for config in configs:
        server = config["mcpServers"]["mnemosyne"]
        if "command" in server:
            assert server["command"].endswith("/mnemosyne")
            args = build_parser().parse_args(server["args"])
            assert args.run.__name__ == "_mcp" and args.db and args.session
        else:
            assert re.fullmatch(r"http://127\.0\.0\.1:\d+/mcp", server["url"])


def test_the_mcp_tool_table_names_every_tool_and_each_of_its_arguments():
    section = README.read_text(encoding="utf-8").split("\n## MCP")[1].split("\n## ")[0]
    rows = dict(re.findall(r"^\| `(\w+)` \| (.*) \|$", section, flags=re.M))
    assert set(rows) == {spec.name for spec in TOOLS}
    for spec in TOOLS:
        for argument in spec.properties:
            assert f"`{argument}`" in rows[spec.name], f"the README's {spec.name} row omits `{argument}`"


def test_the_tool_error_the_readme_quotes_is_the_one_a_tool_returns(tmp_path: Path):
    section = README.read_text(encoding="utf-8").split("\n## MCP")[1].split("\n## ")[0]
    quoted = json.loads(" ".join(re.search(r"`(\{\"error\".*?\}\})`", section, flags=re.S)[1].split()))
    sessions = Sessions(tmp_path / "m.db")
    with pytest.raises(MnemosyneError) as caught:
        call_tool(sessions, "remember", {"content": "too important", "importance": 5})
    sessions.close()
    assert quoted == {"error": {"code": caught.value.code, "message": str(caught.value)}}
