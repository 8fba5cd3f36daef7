"""The ``mnemosyne`` command, run as a real process: output, JSON and exit codes.

Each process start costs a few hundred milliseconds, so state is prepared and checked
through the library in-process where the CLI itself is not what is being tested.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from held_endpoint import held_endpoint
from mnemosyne import Mnemosyne
from mnemosyne.dr.recovery import create_backup
from mnemosyne.transfer import FORMAT, VERSION

pytestmark = pytest.mark.usefixtures("lexical_only")  # storage, not ranking: no model

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
OK, NOT_FOUND, BAD_INPUT, FAILURE = 0, 1, 2, 3


class Cli:
    """Runs ``python -m mnemosyne COMMAND ... --db <db>`` and returns the finished process."""

    def __init__(self, tmp_path: Path) -> None:
        self.db = tmp_path / "cli.db"
        self.unused_default = tmp_path / "default-must-stay-unused.db"
        # Never touch the user's real database, whatever a command defaults to.
        self.env = {**os.environ, "MNEMOSYNE_DB": str(self.unused_default), "MNEMOSYNE_EMBEDDER": "none"}

    def __call__(
        self, *args: str, db: Path | str | None = None, expect: int | None = OK
    ) -> subprocess.CompletedProcess:
        command = [sys.executable, "-m", "mnemosyne", *args]
        if args and not args[0].startswith("-"):
            command += ["--db", str(self.db if db is None else db)]
        done = subprocess.run(command, capture_output=True, text=True, env=self.env, timeout=60)
        if expect is not None:
            assert done.returncode == expect, (command, done.stdout, done.stderr)
            assert "Traceback" not in done.stderr, done.stderr
        return done

    def json(self, *args: str, **kwargs) -> object:
        return json.loads(self(*args, "--json", **kwargs).stdout)

    def memories(self, session: str = "default", db: Path | None = None) -> Mnemosyne:
        """The same database, opened in-process."""
        return Mnemosyne(session_id=session, db_path=db or self.db)


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    runner = Cli(tmp_path)
    yield runner
    assert not runner.unused_default.exists()


def test_remember_takes_a_retry_key_an_expiry_and_recall_its_context_and_explanation(cli: Cli) -> None:
    first = cli("remember", "Deploy 1 rolled out", "--idempotency-key", "deploy-1").stdout.strip()
    again = cli("remember", "Deploy 1 rolled out", "--idempotency-key", "deploy-1").stdout.strip()
    assert again == first  # a retry, from another process: no copy
    cli("remember", "Deploy 1 rolled out", "--allow-duplicate")
    cli("remember", "The freeze is on", "--created-at", "2020-01-01T00:00:00+00:00",
        "--valid-until", "2020-01-02T00:00:00+00:00")
    refused = cli("remember", "Too late", "--valid-until", "2020-01-01", expect=BAD_INPUT)
    assert "valid_until" in refused.stderr
    with cli.memories() as mem:
        assert mem.get_stats().total == 3  # the refused write stored nothing
        assert [m.content for m in mem.recall("freeze")] == []  # it stopped being true
        ids = [mem.remember(f"Step {n} of the migration", created_at=f"2026-01-01T10:0{n}:00+00:00")
               for n in range(3)]

    hit = cli.json("recall", "Step 1 of the migration", "-k", "1", "--context", "1", "--explain")[0]
    assert hit["id"] == ids[1]
    assert [event["id"] for event in hit["context"]] == [ids[0], ids[2]]
    assert hit["explanation"]["score"] == pytest.approx(hit["score"])
    table = cli("recall", "Step 1 of the migration", "-k", "1", "--context", "1", "--explain").stdout.splitlines()
    assert [ids[0] in table[1], ids[1] in table[2], ids[2] in table[3]] == [True, True, True]
    scored = [bool(re.match(r"\d+\.\d{3} ", line)) for line in table[1:4]]
    assert scored == [False, True, False]  # only the result has a score
    assert "score=" in table[4]
    assert "--context" in cli("recall", "x", "--context", "51", expect=BAD_INPUT).stderr


def test_help(cli: Cli) -> None:
    done = cli("--help")
    assert done.stdout.startswith("usage: mnemosyne")
    for command in ("remember", "recall", "get", "update", "forget", "stats",
                    "backup", "verify-backup", "restore", "export", "import"):
        assert command in done.stdout
    assert cli(expect=BAD_INPUT).stdout.startswith("usage:")  # no command: help, and exit 2


def test_remember_prints_an_id_and_recall_finds_it(cli: Cli) -> None:
    content = "The staging server reboots every Sunday at 04:00"
    memory_id = cli("remember", content, "--importance", "0.8").stdout.strip()
    assert UUID.match(memory_id), memory_id
    with cli.memories() as mem:
        other = mem.remember("Lunch is at noon", scope="global")

    table = cli("recall", "staging server reboot").stdout.splitlines()
    assert table[0].split() == ["score", "created", "scope", "source", "id", "content"]
    assert memory_id in table[1] and table[1].endswith(content)

    results = cli.json("recall", "staging server reboot")
    assert isinstance(results, list) and results
    assert all({"id", "content", "score"} <= set(r) for r in results)
    hit = results[0]
    assert hit["id"] == memory_id
    assert hit["content"] == content
    assert isinstance(hit["score"], float) and hit["score"] > 0
    assert hit["importance"] == 0.8

    global_hits = [r["id"] for r in cli.json("recall", "lunch noon staging", "--scope", "global")]
    assert global_hits[0] == other and memory_id not in global_hits  # --scope reaches recall


def test_get_update_forget(cli: Cli) -> None:
    memory_id = cli("remember", "Draft budget is 10k", "--metadata", '{"ticket": 42, "tags": ["q3"]}',
                    "--created-at", "2024-05-06T07:08:09+00:00").stdout.strip()
    got = cli.json("get", memory_id)
    assert got["id"] == memory_id and got["content"] == "Draft budget is 10k"
    assert got["metadata"] == {"ticket": 42, "tags": ["q3"]}
    assert got["created_at"] == "2024-05-06T07:08:09+00:00"
    table = cli("get", memory_id).stdout
    assert "Draft budget is 10k" in table and '{"ticket": 42, "tags": ["q3"]}' in table
    cli("get", memory_id, "--session", "someone-else", expect=NOT_FOUND)  # session-scoped

    updated = cli.json("update", memory_id, "--content", "Final budget is 12k", "--importance", "0.9",
                       "--metadata", '{"ticket": 43}')
    assert updated["content"] == "Final budget is 12k"
    assert (updated["importance"], updated["metadata"]) == (0.9, {"ticket": 43})
    with cli.memories() as mem:
        assert mem.get(memory_id).content == "Final budget is 12k"
        assert mem.recall("final budget")[0].id == memory_id

    assert cli.json("forget", memory_id) == {"forgotten": memory_id}
    cli("get", memory_id, expect=NOT_FOUND)
    with cli.memories() as mem:
        assert mem.get(memory_id) is None
        assert memory_id not in [m.id for m in mem.recall("budget")]


def test_timeline_shows_the_latest_events_and_says_earlier_ones_were_left_out(cli: Cli) -> None:
    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    with cli.memories() as mem:
        mem.remember_many([{"content": f"event {i}", "created_at": start + timedelta(minutes=i)} for i in range(150)])
    done = cli("timeline", "--json")
    assert [m["content"] for m in json.loads(done.stdout)] == [f"event {i}" for i in range(50, 150)]
    notice = json.loads(done.stderr)["notice"]
    assert "latest 100 events" in notice and "--limit" in notice and "--before 2026-01-01T00:50:00+00:00" in notice
    human = cli("timeline", "--limit", "3")
    assert human.stdout.splitlines()[-1].endswith("event 149")
    assert human.stderr.startswith("mnemosyne: these are the latest 3 events; earlier ones were left out")
    assert cli("timeline", "--limit", "3", "-q").stderr == ""
    everything = cli("timeline", "--limit", "150", "--json")
    assert len(json.loads(everything.stdout)) == 150 and everything.stderr == ""
    earlier = cli("timeline", "--until", "2026-01-01T00:50:00+00:00", "--limit", "1000000", "--json")
    assert len(json.loads(earlier.stdout)) == 51 and earlier.stderr == ""
    earlier = cli("timeline", "--before", "2026-01-01T00:50:00+00:00", "--limit", "1000000", "--json")
    assert len(json.loads(earlier.stdout)) == 50 and earlier.stderr == ""


@pytest.mark.parametrize("limit", ["1", "2"])
def test_following_the_timeline_notice_back_shows_every_event_once_and_ends(cli: Cli, limit: str) -> None:
    """Three events at one time straddle a page's edge: the page takes all three."""
    day = datetime(2026, 1, 1, 10, tzinfo=timezone.utc)
    with cli.memories() as mem:
        mem.remember_many([{"content": "early", "created_at": day}]
                          + [{"content": f"same time {x}", "created_at": day + timedelta(days=1)} for x in "abc"]
                          + [{"content": "late", "created_at": day + timedelta(days=2)}])
    pages: list[list[str]] = []
    args = ["timeline", "--limit", limit, "--json"]
    while len(pages) < 6:
        done = cli(*args)
        pages.append([m["content"] for m in json.loads(done.stdout)])
        if not done.stderr:
            break
        # Do as the notice says: the option and time it names, in place of any given before.
        flag, value = re.search(r"(--\w+) (\S+) \(the first shown", json.loads(done.stderr)["notice"]).groups()
        args = ["timeline", "--limit", limit, "--json", flag, value]
    shown = [content for page in reversed(pages) for content in page]
    assert shown == ["early", "same time a", "same time b", "same time c", "late"]  # each once, then done
    assert any({"same time a", "same time b", "same time c"} <= set(page) for page in pages)


def test_stats_backup_verify_restore(cli: Cli, tmp_path: Path) -> None:
    with cli.memories() as mem:
        kept = mem.remember("the vault code is in the blue binder")
        mem.remember("the spare key is under the mat", scope="global")
    backup = tmp_path / "backups" / "nightly.bak"  # folder created on demand
    assert "backed up 2 memories" in cli("backup", str(backup)).stdout
    assert backup.is_file()
    assert cli.json("verify-backup", str(backup))["memory_count"] == 2

    stats = cli.json("stats")
    assert stats["total"] == 2 and stats["by_scope"] == {"global": 1, "session": 1}
    assert stats["last_backup_at"] is not None

    with cli.memories() as mem:
        added = mem.remember("a memory written after the backup")
        mem.forget(kept)
    assert cli.json("restore", str(backup))["memory_count"] == 2
    with cli.memories() as mem:
        assert mem.get(added) is None
        assert mem.recall("vault code blue binder")[0].id == kept
        assert mem.get_stats().total == 2
    assert len(list(tmp_path.glob("cli.db.pre-restore-*.bak"))) == 1


def test_restore_through_a_symlinked_db_restores_the_file_it_points_at(cli: Cli, tmp_path: Path) -> None:
    real = tmp_path / "data" / "real.db"
    real.parent.mkdir()
    link = tmp_path / "app" / "memories.db"
    link.parent.mkdir()
    link.symlink_to(real)
    with cli.memories(db=link) as mem:
        mem.remember("kept through the link", scope="global")
    backup = tmp_path / "b.bak"
    cli("backup", str(backup), db=link)
    real.write_bytes(os.urandom(8192))  # damaged beyond opening

    assert cli.json("restore", str(backup), db=link)["memory_count"] == 1
    assert link.is_symlink() and sorted(p.name for p in link.parent.iterdir()) == ["memories.db"]
    assert len(list(real.parent.glob("real.db.unreadable-*"))) == 1
    with cli.memories(db=real) as mem:
        assert [m.content for m in mem.recall("kept through the link")] == ["kept through the link"]


def test_export_import(cli: Cli, tmp_path: Path) -> None:
    ids = []
    for i in range(3):
        with cli.memories(session=f"s{i}") as mem:
            ids.append(mem.remember(f"exported memory {i}", metadata={"i": i}))
    export = tmp_path / "out" / "all.jsonl"
    assert cli.json("export", str(export)) == {"exported": 3, "path": str(export)}
    other = tmp_path / "other.db"
    assert cli.json("import", str(export), db=other) == {"imported": 3, "path": str(export)}
    assert "imported 0 new memories" in cli("import", str(export), db=other).stdout
    for i, memory_id in enumerate(ids):
        with cli.memories(session=f"s{i}", db=other) as mem:
            memory = mem.get(memory_id)
            assert (memory.content, memory.metadata) == (f"exported memory {i}", {"i": i})


# -- exit codes and errors --------------------------------------------------------------


@pytest.fixture
def corrupt_backup(tmp_path: Path) -> Path:
    source = tmp_path / "source.db"
    with Mnemosyne(db_path=source) as mem:
        mem.remember_many([f"backed up {i}" for i in range(20)])
    backup = tmp_path / "corrupt.bak"
    create_backup(db_path=source, backup_path=backup)
    data = bytearray(backup.read_bytes())
    middle = slice(len(data) // 2, len(data) // 2 + 32)
    data[middle] = bytes(byte ^ 0xFF for byte in data[middle])  # changed whatever was there (zeros too)
    backup.write_bytes(bytes(data))
    return backup


UNKNOWN = "01900000-0000-7000-8000-000000000000"
FAILURES = {
    "get unknown id": (["get", UNKNOWN], NOT_FOUND, "not_found"),
    "forget unknown id": (["forget", UNKNOWN], NOT_FOUND, "not_found"),
    "update unknown id": (["update", UNKNOWN, "--content", "x"], NOT_FOUND, "not_found"),
    "importance 5": (["remember", "hello", "--importance", "5"], BAD_INPUT, "invalid_input"),
    "empty content": (["remember", ""], BAD_INPUT, "invalid_input"),
    "blank query": (["recall", "  \n "], BAD_INPUT, "invalid_input"),
    "import missing file": (["import", "{tmp}/missing.jsonl"], BAD_INPUT, "invalid_input"),
    "import non-UTF-8 file": (["import", "{latin1}"], BAD_INPUT, "invalid_input"),
    "top_k too large for any integer": (["recall", "hello", "-k", "99999999999999999999"], BAD_INPUT,
                                        "invalid_input"),
    "backup over an existing file": (["backup", "{latin1}"], BAD_INPUT, "invalid_input"),
    "backup to a folder's name": (["backup", "."], BAD_INPUT, "invalid_input"),
    "backup to the root": (["backup", "/"], BAD_INPUT, "invalid_input"),
    "restore corrupt backup": (["restore", "{corrupt}"], FAILURE, "backup_error"),
    "verify corrupt backup": (["verify-backup", "{corrupt}"], FAILURE, "backup_error"),
}


@pytest.mark.parametrize(("args", "code", "error_code"), FAILURES.values(), ids=FAILURES.keys())
def test_failures_exit_with_their_code_and_a_json_error(
    cli: Cli, tmp_path: Path, request: pytest.FixtureRequest, args, code, error_code
) -> None:
    with cli.memories() as mem:
        existing = mem.remember("an existing memory")
    corrupt = request.getfixturevalue("corrupt_backup") if "{corrupt}" in args else None
    latin1 = tmp_path / "latin1.jsonl"
    latin1.write_bytes('{"content": "café au lait"}\n'.encode("latin-1"))
    args = [
        a.replace("{tmp}", str(tmp_path)).replace("{corrupt}", str(corrupt)).replace("{latin1}", str(latin1))
        for a in args
    ]

    done = cli(*args, "--json", expect=code)
    assert done.stdout == ""
    error = json.loads(done.stderr)["error"]  # the whole of stderr is one JSON object
    assert error["code"] == error_code
    assert isinstance(error["message"], str) and error["message"]
    with cli.memories() as mem:  # nothing was written, nothing was lost
        assert mem.get_stats().total == 1 and mem.get(existing) is not None


@pytest.mark.parametrize(("args", "code"), [
    (["get", UNKNOWN], BAD_INPUT),  # there is no database to look in
    (["remember", "hello", "--importance", "5"], BAD_INPUT),
    (["backup", "{tmp}/b.bak"], BAD_INPUT),  # there is no database to back up
    (["import", "{tmp}/latin1.jsonl"], BAD_INPUT),
])
def test_failures_without_json_print_one_readable_line(cli: Cli, tmp_path: Path, args, code) -> None:
    (tmp_path / "latin1.jsonl").write_bytes('{"content": "café"}\n'.encode("latin-1"))
    done = cli(*[a.replace("{tmp}", str(tmp_path)) for a in args], expect=code)
    assert done.stdout == ""
    assert done.stderr.startswith("mnemosyne: error: ") and len(done.stderr.splitlines()) == 1


def test_a_non_utf8_import_says_what_is_wrong(cli: Cli, tmp_path: Path) -> None:
    latin1 = tmp_path / "latin1.jsonl"
    latin1.write_bytes('{"content": "café"}\n'.encode("latin-1"))
    error = json.loads(cli("import", str(latin1), "--json", expect=BAD_INPUT).stderr)["error"]
    assert "not UTF-8" in error["message"] and str(latin1) in error["message"]


def test_an_impossible_port_is_bad_input(cli: Cli) -> None:
    done = cli("mcp", "--http", "--port", "70000", expect=BAD_INPUT)
    assert "--port" in done.stderr and "65535" in done.stderr


@pytest.mark.parametrize("args", [
    ["recall", "x", "-k", "0"],
    ["recall", "x", "--since", "not-a-date"],
    ["recall", "x", "--source", ""],
    ["remember", "x", "--importance", "5"],
    ["remember", "x", "--created-at", "yesterday-ish"],
    ["remember", "x", "--source", ""],
    ["remember", "x", "--metadata", '{"a": NaN}'],
    ["remember", "x", "--metadata", '{"a": ' * 150 + "1" + "}" * 150],
    ["timeline", "--limit", "0"],
    ["timeline", "--until", "not-a-date"],
    ["timeline", "--before", "not-a-date"],
    ["timeline", "--since", "2026-01-02", "--before", "2026-01-01"],
    ["import", "missing.jsonl"],
    ["import", "{tmp}/not-json.jsonl"],
    ["reembed", "--embedder", "bogus"],
    ["reembed", "--embedder", "none"],
    ["undo-sleep", "nope"],
])
def test_bad_input_is_refused_before_any_database_is_created(cli: Cli, tmp_path: Path, args: list[str]) -> None:
    (tmp_path / "not-json.jsonl").write_text("not json\n")
    new = tmp_path / "new" / "memories.db"
    done = cli(*[a.replace("{tmp}", str(tmp_path)) for a in args], db=new, expect=BAD_INPUT)
    assert done.stderr.startswith("mnemosyne: error: ") and len(done.stderr.splitlines()) == 1
    assert not new.parent.exists()  # no file, and no folder for it


@pytest.mark.parametrize("args", [
    ["--metadata", '{"a": NaN}'], ["--metadata", '{"a": ' * 150 + "1" + "}" * 150],
    ["--content", " "], ["--importance", "2"],
])
def test_a_bad_update_leaves_an_older_database_unmigrated(cli: Cli, args: list[str]) -> None:
    shutil.copyfile(Path(__file__).parent / "fixtures" / "schema_v1.db", cli.db)
    before = cli.db.read_bytes()
    cli("update", UNKNOWN, *args, expect=BAD_INPUT)
    assert cli.db.read_bytes() == before


@pytest.mark.parametrize("args", [
    ["stats"], ["recall", "font"], ["timeline"], ["episodes"], ["export", "{tmp}/out.jsonl"], ["sleep"],
    ["reembed", "--missing"], ["get", UNKNOWN], ["forget", UNKNOWN], ["update", UNKNOWN, "--content", "x"],
    ["backup", "{tmp}/out.bak"],
])
def test_a_command_that_only_reads_refuses_a_database_that_is_not_there(
    cli: Cli, tmp_path: Path, args: list[str]
) -> None:
    typo = tmp_path / "not-mounted" / "memories.db"
    done = cli(*[a.replace("{tmp}", str(tmp_path)) for a in args], db=typo, expect=BAD_INPUT)
    assert f"there is no database at {typo}" in done.stderr
    assert not typo.parent.exists()


def test_bad_metadata_json_is_bad_input(cli: Cli) -> None:
    done = cli("remember", "hello", "--metadata", "{not json", expect=BAD_INPUT)
    assert "--metadata" in done.stderr and "not valid JSON" in done.stderr
    cli("remember", "hello", "--metadata", "[1, 2]", expect=BAD_INPUT)  # JSON, but not an object
    assert not cli.db.exists()


def test_unreadable_database_is_a_storage_failure(cli: Cli) -> None:
    cli.db.write_text("this is not a database\n", encoding="utf-8")
    error = json.loads(cli("stats", "--json", expect=FAILURE).stderr)["error"]
    assert error["code"] == "not_a_database"
    assert cli.db.read_text(encoding="utf-8") == "this is not a database\n"


def test_bad_metadata_with_json_flag_is_a_json_error(cli: Cli) -> None:
    done = cli("remember", "hello", "--metadata", "{not json", "--json", expect=BAD_INPUT)
    assert json.loads(done.stderr)["error"]["code"] == "invalid_input"


def test_export_to_a_folder_is_bad_input(cli: Cli, tmp_path: Path) -> None:
    with cli.memories() as mem:
        mem.remember("something")
    folder = tmp_path / "a-folder"
    folder.mkdir()
    done = cli("export", str(folder), "--json", expect=BAD_INPUT)
    assert done.stdout == ""
    error = json.loads(done.stderr)["error"]
    assert error["code"] == "invalid_input"
    assert error["message"].endswith("a-folder is a folder; give the export file's path")
    assert list(folder.iterdir()) == [] and not list(tmp_path.glob(".a-folder*"))  # no temp file left


@pytest.mark.parametrize("command", ["backup", "restore", "doctor", "stats"])
def test_an_empty_db_path_is_refused_not_read_as_the_default(cli: Cli, tmp_path: Path, command: str) -> None:
    args = {"backup": [str(tmp_path / "b.bak")], "restore": [str(tmp_path / "b.bak")]}.get(command, [])
    done = cli(command, *args, "--json", db="", expect=BAD_INPUT)
    assert json.loads(done.stderr)["error"]["code"] == "invalid_input"


def test_export_writes_through_a_symlink_and_into_a_pipe(cli: Cli, tmp_path: Path) -> None:
    with cli.memories() as mem:
        mem.remember("exported through a link")
    target = tmp_path / "real.jsonl"
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    cli("export", str(link))
    assert link.is_symlink() and "exported through a link" in target.read_text(encoding="utf-8")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE, text=True)
    cli("export", str(fifo))
    assert "exported through a link" in reader.communicate(timeout=30)[0]
    assert fifo.is_fifo()
    # ... and an import reads a pipe: `mnemosyne import <(...)`.
    other = tmp_path / "other.db"
    writer = subprocess.Popen(f"cat {target} > {fifo}", shell=True)
    cli("import", str(fifo), db=other)
    writer.wait(timeout=30)
    with cli.memories(db=other) as mem:
        assert mem.get_stats().total == 1


def test_a_bad_export_piped_into_a_new_database_path_creates_no_database(cli: Cli, tmp_path: Path) -> None:
    new = tmp_path / "new.db"
    bad = json.dumps({"format": FORMAT, "version": VERSION}) + "\nnot json\n"
    done = subprocess.run(
        [sys.executable, "-m", "mnemosyne", "import", "/dev/stdin", "--db", str(new)],
        input=bad, capture_output=True, text=True, env=cli.env, timeout=60,
    )
    assert done.returncode == BAD_INPUT and "/dev/stdin:2" in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_export_to_standard_output_streams_and_appends(cli: Cli, tmp_path: Path) -> None:
    with cli.memories() as mem:
        mem.remember("streamed out")
    export = f"{sys.executable} -m mnemosyne export /dev/stdout --db {cli.db}"
    piped = subprocess.run(f"{export} | cat", shell=True, capture_output=True, text=True, env=cli.env, timeout=60)
    assert [json.loads(line)["type"] for line in piped.stdout.splitlines()[1:]] == ["memory", "end"]
    assert piped.stderr == "exported 1 memories\n"  # not mixed into the export
    log = tmp_path / "log.jsonl"
    log.write_text("a line already there\n", encoding="utf-8")
    subprocess.run(f"{export} -q >> {log}", shell=True, check=True, env=cli.env, timeout=60)
    lines = log.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "a line already there" and "streamed out" in lines[-2]


def test_a_reader_that_stops_early_ends_the_command_quietly(cli: Cli) -> None:
    with cli.memories() as mem:
        mem.remember_many([f"event {i}" for i in range(3000)])
    done = subprocess.run(
        f"{sys.executable} -m mnemosyne timeline --limit 3000 --db {cli.db} | head -1; echo \"${{PIPESTATUS[0]}}\"",
        shell=True, executable="/bin/bash", capture_output=True, text=True, env=cli.env, timeout=60,
    )
    assert done.stderr == ""
    assert done.stdout.splitlines()[-1] == "141"


def test_text_a_latin1_terminal_cannot_show_is_escaped(cli: Cli) -> None:
    with cli.memories() as mem:
        mem.remember("naïve café ✓ 東京")
    cli.env["PYTHONIOENCODING"] = "latin-1"
    command = [sys.executable, "-m", "mnemosyne", "recall", "café", "--db", str(cli.db)]
    human = subprocess.run(command, capture_output=True, env=cli.env, timeout=60, check=True)
    assert "naïve café \\u2713 \\u6771\\u4eac".encode("latin-1") in human.stdout
    found = subprocess.run([*command, "--json"], capture_output=True, env=cli.env, timeout=60, check=True)
    assert json.loads(found.stdout)[0]["content"] == "naïve café ✓ 東京"  # escaped as JSON allows


def test_metadata_nested_thousands_deep_is_bad_input(cli: Cli) -> None:
    deep = "[" * 5000 + "]" * 5000
    done = cli("remember", "x", "--metadata", '{"a": ' + deep + "}", expect=BAD_INPUT)
    assert "not valid JSON" in done.stderr


def test_ctrl_c_during_an_import_is_one_line_and_changes_nothing(cli: Cli, tmp_path: Path) -> None:
    import signal
    import time

    source = tmp_path / "big.jsonl"
    with cli.memories(db=tmp_path / "source.db") as mem:
        mem.remember_many([f"memory number {i} " * 20 for i in range(20_000)])
        mem.export_jsonl(source)
    process = subprocess.Popen(
        [sys.executable, "-m", "mnemosyne", "import", str(source), "--db", str(cli.db), "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli.env,
    )
    # Interrupt once the import's one transaction has spilled pages to the WAL (its
    # schema alone writes far less), so the signal lands in the middle of it.
    wal = Path(f"{cli.db}-wal")
    deadline = time.monotonic() + 60
    while process.poll() is None and time.monotonic() < deadline:
        if wal.exists() and wal.stat().st_size > 2_000_000:
            break
        time.sleep(0.01)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    if process.returncode == OK:
        pytest.skip("the import finished before the interrupt")
    assert process.returncode == 130
    assert json.loads(err)["error"]["code"] == "interrupted"
    with cli.memories() as mem:
        assert mem.get_stats().total in (0, 20_000)


def test_ctrl_c_while_an_import_embeds_keeps_the_import_and_says_so(cli: Cli, tmp_path: Path) -> None:
    import signal

    source = tmp_path / "notes.jsonl"
    with cli.memories(db=tmp_path / "source.db") as mem:
        mem.remember_many([f"note number {i}" for i in range(300)])
        mem.export_jsonl(source)
    with held_endpoint() as endpoint:
        cli.env.update(endpoint.environment())
        process = subprocess.Popen(
            [sys.executable, "-m", "mnemosyne", "import", str(source), "--db", str(cli.db), "--json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli.env,
        )
        # The first request for vectors comes once the memories are committed; it is
        # held, so the interrupt lands while the import embeds them.
        assert endpoint.asked.wait(60), process.communicate(timeout=60)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)
        assert process.returncode == 130 and out == "", err
        error = json.loads(err)["error"]
        assert error["code"] == "interrupted"
        assert (error["imported"], error["waiting_for_vectors"]) == (300, 300)
        assert "the import is committed (300 new memories)" in error["message"]
        assert "reembed --missing" in error["message"]
        with Mnemosyne(db_path=cli.db, embedder="none") as mem:
            assert mem.get_stats().total == 300

        # Without --json: one line that says the same, not a rollback that never happened.
        (tmp_path / "fresh.db").unlink(missing_ok=True)
        endpoint.asked.clear()
        process = subprocess.Popen(
            [sys.executable, "-m", "mnemosyne", "import", str(source), "--db", str(tmp_path / "fresh.db")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli.env,
        )
        assert endpoint.asked.wait(60), process.communicate(timeout=60)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)
        assert process.returncode == 130 and out == ""
        assert err.startswith("mnemosyne: error: interrupted after its commit: the import is committed (300 new")
        assert len(err.splitlines()) == 1 and "Traceback" not in err

        endpoint.release.set()  # what the message advises fills the vectors in
        assert cli.json("reembed", "--missing")["embedded"] == 300


def start_held_at_its_output(command: list[str], env: dict[str, str]) -> tuple[subprocess.Popen, int]:
    """Start the CLI with its output unbuffered into a pipe that is already full: it
    stops at its first write, its work done but its database not closed yet, until
    the returned end of the pipe is read. Whatever it runs in the background
    meanwhile has all the time it needs."""
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    with contextlib.suppress(BlockingIOError):
        while True:
            os.write(write_end, b"\n" * 4096)
    os.set_blocking(write_end, True)
    process = subprocess.Popen(command, stdout=write_end, stderr=subprocess.PIPE, text=True,
                               env={**env, "PYTHONUNBUFFERED": "1"})
    os.close(write_end)
    return process, read_end


def wait_until_writing_to_a_pipe(process: subprocess.Popen) -> None:
    """Return once the process waits in a write to a pipe (Linux tells where)."""
    told = False  # "0" while it runs, and always where the kernel hides it
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()
        try:
            where = Path(f"/proc/{process.pid}/wchan").read_text()
        except OSError:
            pytest.skip("this system does not tell where a process waits")
        told = told or where not in ("", "0")
        if "pipe" in where:
            return
        time.sleep(0.01)
    if not told:
        pytest.skip("this system does not tell where a process waits")
    raise AssertionError("the command never wrote its output")


def read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks)


READ_ONLY_COMMANDS = {
    "stats": ["stats"], "get": ["get", "{id}"], "recall": ["recall", "kestrel rollout"], "timeline": ["timeline"],
    "episodes": ["episodes"], "export": ["export", "/dev/stdout"], "sleep --dry-run": ["sleep", "--dry-run"],
}


def test_commands_that_only_read_record_no_embedder_and_fill_in_no_vector(cli: Cli, tmp_path: Path) -> None:
    # Stored without a model: no vector, no embedder recorded. A process that has a
    # model used to fill in the vectors, and record its model, as it merely looked.
    with Mnemosyne(db_path=cli.db, embedder="none") as mem:
        ids = mem.remember_many([f"note {i} on the kestrel rollout" for i in range(100)])
    copies = {}
    for name in READ_ONLY_COMMANDS:
        copies[name] = tmp_path / f"{name.replace(' ', '')}.db"
        shutil.copyfile(cli.db, copies[name])
    before = cli.db.read_bytes()
    with held_endpoint() as endpoint:
        endpoint.release.set()  # recall's query is embedded: answered at once
        started = {}
        for name, args in READ_ONLY_COMMANDS.items():
            command = [sys.executable, "-m", "mnemosyne", *[a.format(id=ids[0]) for a in args],
                       "--db", str(copies[name])]
            started[name] = start_held_at_its_output(command, {**cli.env, **endpoint.environment()})
        for process, _ in started.values():
            wait_until_writing_to_a_pipe(process)
        time.sleep(2)  # a background pass started at open would be asking for vectors by now
        for name, (process, output) in started.items():
            read_all(output)
            assert process.wait(timeout=60) == OK, (name, process.stderr.read())
            with sqlite3.connect(f"file:{copies[name]}?mode=ro", uri=True) as conn:
                assert conn.execute("SELECT value FROM meta WHERE key = 'embedder'").fetchall() == [], name
                assert conn.execute("SELECT count(*) FROM memory_vectors").fetchone() == (0,), name
            if name != "recall":  # recall counts its results
                assert copies[name].read_bytes() == before, name
        # Only recall asked for vectors: its query's, and its candidates' for this one search.
        assert endpoint.requests <= 2


def test_control_characters_in_a_memory_reach_the_terminal_as_escapes(cli: Cli) -> None:
    cli("remember", "deploy note \x1b]0;pwned\x07\x1b[2J\rFAKE ROW\nsecond line \u202egnirts\u2028end")
    shown = cli("recall", "deploy note").stdout
    assert "\x1b" not in shown and "\r" not in shown and len(shown.splitlines()) == 2  # header and one row
    assert "\\x1b[2J\\x0dFAKE ROW\\x0asecond line \\u202egnirts\\u2028end" in shown


def test_an_unknown_user_in_a_path_is_bad_input(cli: Cli) -> None:
    for args in (("stats",), ("export", "out.jsonl")):
        done = cli(*args, db="~no-such-user-of-mnemosyne/memories.db", expect=BAD_INPUT)
        assert "no-such-user-of-mnemosyne" in done.stderr


def test_a_path_that_is_not_utf8_still_gives_valid_json(cli: Cli, tmp_path: Path) -> None:
    db = os.fsencode(tmp_path) + b"/caf\xff.db"
    for encoding in ("utf-8", ""):  # strict UTF-8 output, and the locale's (surrogateescape)
        env = {**cli.env, "PYTHONIOENCODING": encoding}
        for args in ([b"remember", f"a note to {encoding or 'the locale'}".encode()], [b"stats", b"--json"]):
            done = subprocess.run([sys.executable, "-m", "mnemosyne", *args, b"--db", db],
                                  capture_output=True, env=env, timeout=60)
            assert done.returncode == OK and b"Traceback" not in done.stderr, done.stderr
    stats = json.loads(done.stdout.decode("utf-8"))
    assert stats["total"] == 2 and "caf" in stats["db_path"]
