"""JSON Lines export and import: lossless, idempotent, all-or-nothing."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from mnemosyne import InvalidInputError, Mnemosyne
from snapshots import snapshot

pytestmark = pytest.mark.usefixtures("lexical_only")  # storage, not ranking: no model

CREATED = datetime(2021, 3, 4, 5, 6, 7, 891011, tzinfo=timezone(timedelta(hours=-7)))
VALID_UNTIL = datetime(2031, 1, 1, 0, 0, 0, 500000, tzinfo=timezone.utc)
METADATA = {
    "ticket": 42, "ratio": 0.125, "ok": True, "nothing": None, "city": "Zürich",
    "nested": {"list": [1, "two", [3.5, None], {"deep": "🦉"}], "empty": {}},
}


def record(**fields: Any) -> dict[str, Any]:
    """One export line, as ``export_jsonl`` writes it."""
    base = {
        "id": "0190aaaa-0000-7000-8000-000000000001", "content": "imported fact about otters",
        "source": "import", "importance": 0.4, "scope": "session", "session_id": "beta",
        "created_at": "2020-01-02T03:04:05.678901+00:00", "recorded_at": "2020-01-02T03:04:06+00:00",
        "metadata": {}, "kind": "episodic", "status": "active", "valid_until": None,
    }
    base.update(fields)
    return base


def write_jsonl(path: Path, lines: list[Any], header: bool = True) -> Path:
    out = [json.dumps({"format": "mnemosyne-jsonl", "version": 1})] if header else []
    out += [line if isinstance(line, str) else json.dumps(line, ensure_ascii=False) for line in lines]
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def source(tmp_path: Path) -> Path:
    """A database with two sessions, both scopes, rich metadata and every kind and status."""
    db = tmp_path / "source.db"
    with Mnemosyne(session_id="alpha", db_path=db) as alpha:
        alpha.remember(
            "Deploy window is Friday 18:00 UTC", source="ops", importance=0.9,
            metadata=METADATA, created_at=CREATED, valid_until=VALID_UNTIL,
        )
        alpha.remember("The team prefers dark mode", scope="global", importance=0.0)
        alpha.remember("مرحبا — שלום — e\u0301 — 👩‍💻 multi-line\ncontent\twith tabs", importance=1.0)
        lines = [
            record(id=f"0190aaaa-0000-7000-8000-00000000000{i}", kind=kind, status=status,
                   content=f"imported {kind} that is {status}", scope=scope)
            for i, (kind, status, scope) in enumerate(
                [("fact", "active", "global"), ("summary", "consolidated", "session"),
                 ("episodic", "superseded", "session"), ("fact", "expired", "global")], start=1)
        ]
        assert alpha.import_jsonl(write_jsonl(tmp_path / "seed.jsonl", lines)) == 4
    with Mnemosyne(session_id="beta", db_path=db) as beta:
        beta.remember("Beta's private note", metadata={"k": [1, 2, 3]})
    return db


def test_export_then_import_into_a_fresh_database_is_lossless(source: Path, tmp_path: Path) -> None:
    export = tmp_path / "out" / "memories.jsonl"  # missing folder is created
    with Mnemosyne(session_id="alpha", db_path=source) as mem:
        assert mem.export_jsonl(export) == 8

    fresh = tmp_path / "fresh.db"
    with Mnemosyne(session_id="someone-else", db_path=fresh) as mem:
        assert mem.import_jsonl(export) == 8

    original, copied = snapshot(source), snapshot(fresh)
    assert copied == original
    assert len(copied) == 8
    assert {m["kind"] for m in copied.values()} == {"episodic", "fact", "summary"}
    assert {m["status"] for m in copied.values()} == {"active", "consolidated", "superseded", "expired"}
    assert {m["session_id"] for m in copied.values()} == {"alpha", "beta"}

    with Mnemosyne(session_id="alpha", db_path=fresh) as mem:
        deploy = mem.recall("deploy window", top_k=5)[0]
        assert deploy.content == "Deploy window is Friday 18:00 UTC"
        assert deploy.metadata == METADATA
        assert json.dumps(deploy.metadata) == json.dumps(METADATA)  # same types and key order
        assert deploy.created_at == CREATED
        assert deploy.valid_until == VALID_UNTIL
        assert deploy.source == "ops" and deploy.importance == 0.9 and deploy.scope == "session"
        assert deploy.recorded_at.isoformat() == original[deploy.id]["recorded_at"]
        assert deploy.recorded_at.tzinfo is not None
        # Visibility survives too: beta's session memory is not visible from alpha.
        assert "Beta's private note" not in [m.content for m in mem.recall("private note")]
    with Mnemosyne(session_id="beta", db_path=fresh) as mem:
        assert mem.recall("private note")[0].content == "Beta's private note"


def test_export_file_format(source: Path, tmp_path: Path) -> None:
    export = tmp_path / "memories.jsonl"
    with Mnemosyne(db_path=source) as mem:
        mem.export_jsonl(str(export))
    lines = export.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0]) == {"format": "mnemosyne-jsonl", "version": 1}
    records = [json.loads(line) for line in lines[1:]]
    assert len(records) == 8
    assert [r["id"] for r in records] == sorted(r["id"] for r in records)
    assert "Zürich" in export.read_text(encoding="utf-8")  # UTF-8, not \u escapes
    for r in records:
        assert not {"score", "explanation", "access_count"} & set(r)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temp file left


def test_importing_the_same_file_again_adds_nothing(source: Path, tmp_path: Path) -> None:
    export = tmp_path / "memories.jsonl"
    with Mnemosyne(db_path=source) as mem:
        mem.export_jsonl(export)
        assert mem.import_jsonl(export) == 0  # into the database it came from
    fresh = tmp_path / "fresh.db"
    with Mnemosyne(db_path=fresh) as mem:
        assert mem.import_jsonl(export) == 8
        assert mem.import_jsonl(export) == 0
        assert mem.get_stats().total == 8
    assert snapshot(fresh) == snapshot(source)


def test_export_includes_every_session(source: Path, tmp_path: Path) -> None:
    export = tmp_path / "memories.jsonl"
    with Mnemosyne(session_id="gamma-has-nothing", db_path=source) as mem:
        assert mem.export_jsonl(export) == 8
    records = [json.loads(line) for line in export.read_text(encoding="utf-8").splitlines()[1:]]
    assert {r["id"] for r in records} == set(snapshot(source))
    assert {(r["session_id"], r["scope"]) for r in records} == {
        ("alpha", "session"), ("alpha", "global"), ("beta", "session"), ("beta", "global"),
    }


def test_empty_database_exports_a_header_only(tmp_path: Path) -> None:
    export = tmp_path / "empty.jsonl"
    with Mnemosyne(db_path=tmp_path / "empty.db") as mem:
        assert mem.export_jsonl(export) == 0
        assert mem.import_jsonl(export) == 0
    assert len(export.read_text(encoding="utf-8").splitlines()) == 1


def missing(field: str) -> dict[str, Any]:
    line = record(id="0190aaaa-0000-7000-8000-0000000000ff")
    del line[field]
    return line


BAD_LINES = {
    "bad json": '{"id": "x", "content": ',
    "not an object": json.dumps(["a", "list"]),
    "missing content": missing("content"),
    "missing created_at": missing("created_at"),
    "importance 2": record(id="0190aaaa-0000-7000-8000-0000000000ff", importance=2),
    "empty content": record(id="0190aaaa-0000-7000-8000-0000000000ff", content="   "),
    "unknown scope": record(id="0190aaaa-0000-7000-8000-0000000000ff", scope="team"),
    "unknown status": record(id="0190aaaa-0000-7000-8000-0000000000ff", status="archived"),
    "bad timestamp": record(id="0190aaaa-0000-7000-8000-0000000000ff", created_at="yesterday"),
    "metadata not a dict": record(id="0190aaaa-0000-7000-8000-0000000000ff", metadata=[1]),
}


@pytest.mark.parametrize("bad", BAD_LINES.values(), ids=BAD_LINES.keys())
def test_an_invalid_line_imports_nothing(tmp_path: Path, bad: Any) -> None:
    good = [record(id=f"0190aaaa-0000-7000-8000-00000000001{i}", content=f"good line {i}") for i in range(3)]
    path = write_jsonl(tmp_path / "bad.jsonl", [good[0], good[1], bad, good[2]])
    db = tmp_path / "target.db"
    with Mnemosyne(session_id="beta", db_path=db) as mem:
        existing = mem.remember("already here before the import")
        with pytest.raises(InvalidInputError) as raised:
            mem.import_jsonl(path)
        assert isinstance(raised.value, ValueError)
        assert f"{path}:4" in str(raised.value)  # names the offending line (header is line 1)
        assert mem.get_stats().total == 1
        assert mem.get(existing) is not None
        assert all(mem.get(line["id"]) is None for line in good)
        assert {m.id for m in mem.recall("good line")} <= {existing}


def test_import_rejects_a_missing_file_and_a_newer_format(tmp_path: Path) -> None:
    newer = tmp_path / "v2.jsonl"
    newer.write_text(json.dumps({"format": "mnemosyne-jsonl", "version": 2}) + "\n"
                     + json.dumps(record()) + "\n", encoding="utf-8")
    with Mnemosyne(db_path=tmp_path / "db.db") as mem:
        with pytest.raises(InvalidInputError):
            mem.import_jsonl(tmp_path / "nope.jsonl")
        with pytest.raises(InvalidInputError, match="version 2"):
            mem.import_jsonl(newer)
        assert mem.get_stats().total == 0


def test_import_without_header_and_with_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "plain.jsonl"
    path.write_text("\n" + json.dumps(record()) + "\n\n", encoding="utf-8")
    with Mnemosyne(session_id="beta", db_path=tmp_path / "db.db") as mem:
        assert mem.import_jsonl(path) == 1
        memory = mem.get(record()["id"])
    assert memory.created_at == datetime(2020, 1, 2, 3, 4, 5, 678901, tzinfo=timezone.utc)
    assert memory.recorded_at == datetime(2020, 1, 2, 3, 4, 6, tzinfo=timezone.utc)
    assert memory.valid_until is None and memory.kind == "episodic" and memory.status == "active"
