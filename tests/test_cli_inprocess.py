"""The ``mnemosyne`` command: results, exit codes, --json, --quiet and progress bars.

In-process through ``main(argv)`` for speed, and as real processes where what
matters is the process itself (exit status, a terminal on stderr, imports).
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from mnemosyne import Mnemosyne
from mnemosyne.interfaces.cli import EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_NOT_FOUND, EXIT_OK, main
from mnemosyne.testing import HashEmbedder


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "memories.db")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse rejects malformed arguments itself, with status 2
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_a_session_id_too_long_is_bad_input_and_creates_no_database(capsys, db):
    code, _, err = run(capsys, "remember", "never stored", "--db", db, "--session", "s" * 100_000, "--json")
    assert code == EXIT_BAD_INPUT
    assert json.loads(err)["error"]["code"] == "invalid_input" and "session_id is 100_000 characters" in err
    assert not os.path.exists(db)


def test_every_operation_round_trips(capsys, db):
    code, out, _ = run(capsys, "remember", "Deploy window is Friday 18:00 UTC", "--db", db, "--source", "ops",
                       "--importance", "0.8", "--scope", "global", "--metadata", '{"t": 1}')
    assert code == EXIT_OK
    memory_id = out.strip()

    code, out, _ = run(capsys, "recall", "when is the deploy window", "--db", db, "--json")
    assert code == EXIT_OK
    [found] = json.loads(out)
    assert (found["id"], found["source"], found["metadata"]) == (memory_id, "ops", {"t": 1})

    code, out, _ = run(capsys, "recall", "deploy window", "--db", db)
    assert "Deploy window is Friday 18:00 UTC" in out and memory_id in out  # the readable table

    code, out, _ = run(capsys, "update", memory_id, "--importance", "0.9", "--db", db, "--session", "other")
    assert code == EXIT_OK and "0.9" in out  # global: changeable from any session
    code, out, _ = run(capsys, "get", memory_id, "--db", db, "--json")
    assert json.loads(out)["importance"] == 0.9
    code, out, _ = run(capsys, "stats", "--db", db, "--json")
    assert json.loads(out)["total"] == 1
    code, out, _ = run(capsys, "forget", memory_id, "--db", db)
    assert (code, out.strip()) == (EXIT_OK, f"forgot {memory_id}")


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["get", "no-such-id"], EXIT_NOT_FOUND),
        (["forget", "no-such-id"], EXIT_NOT_FOUND),
        (["update", "no-such-id", "--importance", "0.5"], EXIT_NOT_FOUND),
        (["remember", "x", "--importance", "5"], EXIT_BAD_INPUT),
        (["remember", "x", "--importance", "high"], EXIT_BAD_INPUT),
        (["remember", "x", "--metadata", "[1, 2]"], EXIT_BAD_INPUT),
        (["recall", "x", "-k", "0"], EXIT_BAD_INPUT),
        (["recall", "x", "--since", "not a date"], EXIT_BAD_INPUT),
        (["import", "missing.jsonl"], EXIT_BAD_INPUT),
        (["nonsense"], EXIT_BAD_INPUT),
        ([], EXIT_BAD_INPUT),
        (["verify-backup", "missing.bak"], EXIT_FAILURE),
        (["restore", "missing.bak"], EXIT_FAILURE),
    ],
)
def test_exit_codes_scripts_can_trust(capsys, db, tmp_path, monkeypatch, argv, expected):
    monkeypatch.chdir(tmp_path)
    Mnemosyne(db_path=db, embedder="none").close()  # with none there, a lookup is refused, not "not found"
    code, out, err = run(capsys, *argv, *(["--db", db] if argv and argv[0] != "nonsense" else []))
    assert code == expected, err
    if argv and argv[0] != "nonsense":
        assert err.strip(), "a failure says why on stderr"


def test_storage_failure_is_exit_3_with_a_json_error(capsys, tmp_path):
    not_a_db = tmp_path / "notes.db"
    not_a_db.write_text("these are my notes, not a database\n" * 200)
    code, out, err = run(capsys, "recall", "x", "--db", str(not_a_db), "--json")
    assert code == EXIT_FAILURE and out == ""
    error = json.loads(err)["error"]
    assert error["code"] == "not_a_database" and "notes.db" in error["message"]
    assert "Traceback" not in err


def test_an_embedder_other_than_the_recorded_one_is_exit_3_and_names_the_fix(capsys, db, monkeypatch):
    with Mnemosyne(db_path=db, embedder=HashEmbedder(64)) as mem:
        mem.remember("made with the hash model")
    monkeypatch.setenv("MNEMOSYNE_EMBEDDER_URL", "http://127.0.0.1:9/v1")  # never asked: refused first
    monkeypatch.setenv("MNEMOSYNE_EMBEDDER", "openai:another-model")
    code, out, err = run(capsys, "recall", "hash", "--db", db, "--json")
    assert (code, out) == (EXIT_FAILURE, "")
    error = json.loads(err)["error"]
    assert error["code"] == "embedder_mismatch"
    assert "mnemosyne reembed --embedder openai:another-model" in error["message"]


def test_quiet_keeps_results_and_drops_confirmations(capsys, db, tmp_path):
    code, out, _ = run(capsys, "remember", "kept", "--db", db, "--quiet")
    assert code == EXIT_OK and len(out.strip()) > 20  # the id is the result: still printed
    code, out, err = run(capsys, "export", str(tmp_path / "out.jsonl"), "--db", db, "-q")
    assert (code, out, err) == (EXIT_OK, "", "")
    code, out, _ = run(capsys, "export", str(tmp_path / "out.jsonl"), "--db", db)
    assert out.strip() == f"exported 1 memories to {tmp_path / 'out.jsonl'}"
    code, out, _ = run(capsys, "import", str(tmp_path / "out.jsonl"), "--db", db, "--quiet", "--json")
    assert json.loads(out)["imported"] == 0  # --json output is a result, even with --quiet


@pytest.mark.parametrize(("command", "stream"), [("export", "/dev/stdout"), ("import", "/dev/stdin")])
def test_a_dash_for_a_path_is_refused_and_names_the_stream(capsys, db, tmp_path, monkeypatch, command, stream):
    monkeypatch.chdir(tmp_path)
    Mnemosyne(db_path=db, embedder="none").close()
    code, out, err = run(capsys, command, "-", "--db", db, "--json")
    assert (code, out) == (EXIT_BAD_INPUT, "")
    error = json.loads(err)["error"]
    assert error["code"] == "invalid_input" and f"give {stream}" in error["message"] and "./-" in error["message"]
    assert not (tmp_path / "-").exists()


def test_the_timeline_table_has_no_score_column_and_recall_has_one(capsys, db):
    run(capsys, "remember", "the deploy finished", "--db", db)
    code, out, _ = run(capsys, "timeline", "--db", db)
    header, event = out.splitlines()
    assert code == EXIT_OK and header.split() == ["created", "scope", "source", "id", "content"]
    assert event.endswith("the deploy finished")
    code, out, _ = run(capsys, "recall", "deploy", "--db", db)
    assert out.splitlines()[0].split() == ["score", "created", "scope", "source", "id", "content"]


@pytest.mark.parametrize("limit", ["0", "1000001"])
def test_a_limit_out_of_range_says_what_the_flag_takes(capsys, db, limit):
    Mnemosyne(db_path=db, embedder="none").close()
    code, out, err = run(capsys, "timeline", "--limit", limit, "--db", db, "--json")
    assert (code, out) == (EXIT_BAD_INPUT, "")
    message = json.loads(err)["error"]["message"]
    assert message == f"--limit must be an integer from 1 to 1_000_000, got {limit}"  # not Python's None


@pytest.mark.parametrize("command", [["get"], ["update", "--importance", "0.9"]])
def test_one_memory_is_printed_without_the_fields_only_recall_sets(capsys, db, command):
    code, out, _ = run(capsys, "remember", "the deploy finished", "--db", db)
    memory_id = out.strip()
    code, out, _ = run(capsys, command[0], memory_id, *command[1:], "--db", db)
    fields = [line.split()[0] for line in out.splitlines()]
    assert code == EXIT_OK and fields[:2] == ["id", "content"] and "status" in fields
    assert not {"score", "explanation", "context"} & set(fields)
    code, out, _ = run(capsys, "get", memory_id, "--db", db, "--json")
    assert json.loads(out)["score"] is None  # --json keeps the Memory's every field


def cli_process(*argv: str, stderr: int | None = subprocess.PIPE, cwd: Path | None = None):
    return subprocess.Popen([sys.executable, "-m", "mnemosyne", *argv], stdout=subprocess.PIPE,
                            stderr=stderr, cwd=cwd)


def stderr_on_a_terminal(*argv: str) -> tuple[int, str]:
    """Run the CLI with a pseudo-terminal as stderr, as when a person watches; return what it drew."""
    master, slave = pty.openpty()
    process = cli_process(*argv, stderr=slave)
    os.close(slave)
    drawn = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        drawn += chunk
    os.close(master)
    process.stdout.read()
    return process.wait(timeout=60), drawn.decode()


def test_progress_bar_on_a_terminal_only(tmp_path, db):
    with Mnemosyne(db_path=db) as mem:
        mem.remember_many(f"event {i}" for i in range(300))
    out = str(tmp_path / "out.jsonl")

    code, drawn = stderr_on_a_terminal("export", out, "--db", db)
    assert code == 0
    assert "exporting" in drawn and "100%" in drawn and "300/300" in drawn
    assert drawn.endswith("\r\n")  # the line is finished, later output starts clean

    code, drawn = stderr_on_a_terminal("import", out, "--db", str(tmp_path / "copy.db"))
    assert code == 0 and "importing" in drawn and "300/300" in drawn

    code, drawn = stderr_on_a_terminal("export", out, "--db", db, "--quiet")
    assert (code, drawn) == (0, "")

    piped = cli_process("export", out, "--db", db)  # stderr is a pipe: no bar
    assert piped.wait(timeout=60) == 0 and piped.stderr.read() == b""


def test_an_import_draws_its_embedding_as_a_stage_of_its_own(tmp_path, db):
    with Mnemosyne(db_path=db, embedder="none") as mem:
        mem.remember_many(f"event {i}" for i in range(300))
        mem.export_jsonl(tmp_path / "out.jsonl")
    # The local model embeds the 300 memories after they are stored: the storing bar
    # ends at 100% on a line of its own, and a second bar follows the embedding.
    code, drawn = stderr_on_a_terminal("import", str(tmp_path / "out.jsonl"), "--db", str(tmp_path / "copy.db"))
    assert code == 0
    storing, embedding = drawn.split("\r\n")[:2]
    assert storing.split("\r")[-1].startswith("importing  [########################]  100%  300/300")
    assert embedding.split("\r")[-1].startswith("embedding  [########################]  100%  300/300")


def test_a_real_process_exits_with_the_documented_codes(tmp_path, db):
    remember = cli_process("remember", "from a subprocess", "--db", db)
    assert remember.wait(timeout=60) == EXIT_OK
    missing = cli_process("get", "nope", "--db", db)
    assert missing.wait(timeout=60) == EXIT_NOT_FOUND and b"no memory" in missing.stderr.read()
    bad = cli_process("remember", "x", "--importance", "5", "--db", db)
    assert bad.wait(timeout=60) == EXIT_BAD_INPUT and b"importance" in bad.stderr.read()


LOADED = "import sys; print(sorted(m for m in {names!r} if m in sys.modules))"


def imports_after(argv: list[str], names: tuple[str, ...]) -> list[str]:
    code = (
        "import sys\nfrom mnemosyne.interfaces.cli import main\n"
        f"try:\n    main({argv!r})\nexcept SystemExit:\n    pass\n" + LOADED.format(names=names)
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1].replace("'", '"'))


def test_help_imports_no_optional_package():
    optional = ("mcp", "anyio", "pydantic", "uvicorn", "onnxruntime", "tokenizers")
    assert imports_after(["--help"], optional) == []
    assert imports_after(["mcp", "--help"], optional) == []


def test_recall_does_not_import_the_mcp_sdk(db):
    Mnemosyne(db_path=db).close()
    assert imports_after(["recall", "x", "--db", db], ("mcp", "anyio", "pydantic", "uvicorn")) == []
