"""JSON Lines export and import: lossless, idempotent, all-or-nothing."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from mnemosyne import DiskFullError, ImportInterrupted, InvalidInputError, Mnemosyne, MnemosyneError
from mnemosyne.core.consolidation import SleepPolicy, sharing_key
from mnemosyne.core.timeutil import from_timestamp
from mnemosyne.dr.recovery import create_backup
from mnemosyne.testing import HashEmbedder
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


def write_jsonl(path: Path, lines: list[Any], header: bool = True, version: int = 1) -> Path:
    """A file of ``lines``; version 1 (memory lines only) unless told."""
    out = [json.dumps({"format": "mnemosyne-jsonl", "version": version})] if header else []
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
    calls: list[tuple[int, int | None]] = []
    with Mnemosyne(db_path=source) as mem:
        mem.export_jsonl(str(export), progress=lambda done, total: calls.append((done, total)))
    assert calls[0] == (0, 8) and calls[-1] == (8, 8)
    lines = export.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0]) == {"format": "mnemosyne-jsonl", "version": 4}
    records = [json.loads(line) for line in lines[1:-1]]
    assert len(records) == 8 and {r["type"] for r in records} == {"memory"}
    assert json.loads(lines[-1]) == {"type": "end", "records": 8}
    assert [r["id"] for r in records] == sorted(r["id"] for r in records)
    assert "Zürich" in export.read_text(encoding="utf-8")  # UTF-8, not \u escapes
    for r in records:
        assert set(r) == {
            "type", "id", "session_id", "scope", "kind", "status", "content", "source", "importance",
            "metadata", "created_at", "recorded_at", "valid_until", "episode_id", "idempotency_key",
            "strength", "occurrences", "last_seen_at", "access_count", "last_accessed_at",
        }
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
    records = [json.loads(line) for line in export.read_text(encoding="utf-8").splitlines()[1:-1]]
    assert {r["id"] for r in records} == set(snapshot(source))
    assert {(r["session_id"], r["scope"]) for r in records} == {
        ("alpha", "session"), ("alpha", "global"), ("beta", "session"), ("beta", "global"),
    }


def test_empty_database_exports_a_header_and_an_end(tmp_path: Path) -> None:
    export = tmp_path / "empty.jsonl"
    with Mnemosyne(db_path=tmp_path / "empty.db") as mem:
        assert mem.export_jsonl(export) == 0
        assert mem.import_jsonl(export) == 0
    assert [json.loads(line).get("type") for line in export.read_text(encoding="utf-8").splitlines()] == [
        None, "end"]


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


def test_a_file_that_is_not_utf8_imports_nothing(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "latin1.jsonl", [record(content="good line")])
    path.write_bytes(path.read_bytes() + "caf\u00e9\n".encode("latin-1"))
    with Mnemosyne(db_path=tmp_path / "db.db") as mem:
        with pytest.raises(InvalidInputError, match="not UTF-8"):
            mem.import_jsonl(path)
        assert mem.get_stats().total == 0


def test_import_rejects_a_missing_file_and_a_newer_format(tmp_path: Path) -> None:
    newer = tmp_path / "v5.jsonl"
    newer.write_text(json.dumps({"format": "mnemosyne-jsonl", "version": 5}) + "\n"
                     + json.dumps(record()) + "\n", encoding="utf-8")
    with Mnemosyne(db_path=tmp_path / "db.db") as mem:
        with pytest.raises(InvalidInputError):
            mem.import_jsonl(tmp_path / "nope.jsonl")
        with pytest.raises(InvalidInputError, match="version 5"):
            mem.import_jsonl(newer)
        newer.write_text(newer.read_text().replace('"version": 5', '"version": true'))
        with pytest.raises(InvalidInputError, match="version True"):
            mem.import_jsonl(newer)
        assert mem.get_stats().total == 0


def test_an_export_breaks_lines_only_between_records(tmp_path: Path) -> None:
    text = "one\u2028two\x85three\u2029four"  # line breaks to str.splitlines, not to JSON
    export = tmp_path / "breaks.jsonl"
    with Mnemosyne(db_path=tmp_path / "db.db") as mem:
        mem.remember(text)
        mem.export_jsonl(export)
    assert len(export.read_text(encoding="utf-8").splitlines()) == 3
    with Mnemosyne(db_path=tmp_path / "copy.db") as copy:
        assert copy.import_jsonl(export) == 1
        assert [m.content for m in copy.timeline()] == [text]


def test_import_without_header_and_with_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "plain.jsonl"
    path.write_text("\n" + json.dumps(record()) + "\n\n", encoding="utf-8")
    with Mnemosyne(session_id="beta", db_path=tmp_path / "db.db") as mem:
        assert mem.import_jsonl(path) == 1
        memory = mem.get(record()["id"])
    assert memory.created_at == datetime(2020, 1, 2, 3, 4, 5, 678901, tzinfo=timezone.utc)
    assert memory.recorded_at == datetime(2020, 1, 2, 3, 4, 6, tzinfo=timezone.utc)
    assert memory.valid_until is None and memory.kind == "episodic" and memory.status == "active"


# -- episodes, links and sleep state (format version 2) ---------------------------------

DAY = 86_400.0
SHARING = SleepPolicy(promote_recurring=True)  # what several sessions say alike is shared
NOW = time.time()
# Columns that follow the row rather than the memory: its place in this file, and
# when this database last wrote it.
LOCAL_COLUMNS = {"seq", "updated_at"}
TIMES = {"created_at", "recorded_at", "valid_until", "last_seen_at", "last_accessed_at", "started_at", "ended_at"}


def tables(db: Path) -> dict[str, list[dict[str, Any]]]:
    """Every memory (all stored columns but the row's own), episode and link in ``db``,
    times to the microsecond."""
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        result = {}
        for table, order in (("memories", "id"), ("episodes", "id"), ("memory_links", "src_id, dst_id, kind")):
            result[table] = [
                {k: from_timestamp(row[k]) if k in TIMES and row[k] is not None else row[k]
                 for k in row.keys() if k not in LOCAL_COLUMNS}
                for row in conn.execute(f"SELECT * FROM {table} ORDER BY {order}")
            ]
        return result
    finally:
        conn.close()


@pytest.fixture
def slept(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """A database sleep has worked on (an explicit episode and a time-gap episode
    summarised, a duplicate merged, a fact superseded, strengths decayed, recalls
    counted), exported while another explicit episode is still open."""
    db, export = tmp_path / "slept.db", tmp_path / "slept.jsonl"
    with Mnemosyne(session_id="alpha", db_path=db, dedupe_window=0) as mem:
        with mem.episode("deploy v2"):
            for i, text in enumerate(["Started the v2 rollout to the canary hosts.",
                                      "Canary error rate stayed flat for an hour.",
                                      "Rolled v2 out to every region without incident."]):
                mem.remember(text, created_at=NOW - 6 * DAY + i * 60)
        for i, text in enumerate(["The team discussed the new navigation bar layout for mobile screens.",
                                  "Alice proposed a hamburger menu with three nested levels of links.",
                                  "Bob objected that nested menus hurt accessibility for screen readers."]):
            mem.remember(text, created_at=NOW - 5 * DAY + i * 60)
        for i in range(2):
            mem.remember("The staging database password rotates monthly.", created_at=NOW - 3 * DAY + i * 600)
        mem.remember("The release manager is Alice.", created_at=NOW - 2 * 3600)
        mem.remember("The release manager is Bob.", created_at=NOW - 3600, idempotency_key="rm-bob")
        mem.remember("Shared convention: tabs, not spaces.", scope="global", importance=0.9)
        report = mem.sleep()
        assert (report.summaries, report.merged, report.superseded) == (2, 1, 1)
        mem.recall("staging password")
        mem.recall("release manager")
        with mem.episode("migration"):
            mem.remember("Half-way through the schema migration.")
            assert mem.export_jsonl(export) == 14
            yield db, export


def test_episodes_links_and_sleep_state_survive_export_and_import(slept: tuple[Path, Path], tmp_path: Path):
    source, export = slept
    fresh = tmp_path / "fresh.db"
    with Mnemosyne(session_id="someone-else", db_path=fresh) as mem:
        assert mem.import_jsonl(export) == 14
    original, copied = tables(source), tables(fresh)
    assert copied == original
    assert {row["kind"] for row in copied["memory_links"]} == {"summarises", "merges", "supersedes"}
    assert [(row["label"], row["ended_at"] is None) for row in copied["episodes"]] == [
        ("deploy v2", False), ("migration", True)]  # the second was still open
    assert {row["access_count"] for row in copied["memories"]} > {0}
    assert {row["strength"] for row in copied["memories"]} > {1.0}
    assert max(row["occurrences"] for row in copied["memories"]) == 2

    lines = [json.loads(line) for line in export.read_text(encoding="utf-8").splitlines()[1:]]
    assert [line["type"] for line in lines] == ["episode"] * 2 + ["memory"] * 14 + ["link"] * 8 + ["end"]


def test_reads_behave_the_same_after_import(slept: tuple[Path, Path], tmp_path: Path):
    source, export = slept
    fresh = tmp_path / "fresh.db"
    with Mnemosyne(db_path=fresh) as mem:
        mem.import_jsonl(export)
    views = []
    for db in (source, fresh):
        with Mnemosyne(session_id="alpha", db_path=db) as mem:
            stats = mem.get_stats()
            views.append({
                "episodes": [(e.id, e.label, e.size, e.closed, e.event_ids, e.summary and e.summary.id)
                             for e in mem.episodes()],
                "timeline": [m.id for m in mem.timeline(limit=None)],
                # Times are kept to the microsecond, so recency may differ in the last bits.
                "recall": [(m.id, pytest.approx(m.score, rel=1e-9))
                           for m in mem.recall("release manager rollout password", now=NOW)],
                "retry": mem.remember("The release manager is Bob.", idempotency_key="rm-bob"),
                "stats": (stats.total, stats.by_scope, stats.by_status, stats.by_kind, stats.by_session),
            })
    assert views[1] == views[0]
    assert [label for _, label, *_ in views[0]["episodes"]][:2] == ["deploy v2", None]


def test_forget_follows_the_links_after_import(slept: tuple[Path, Path], tmp_path: Path):
    source, export = slept
    fresh = tmp_path / "fresh.db"
    with Mnemosyne(db_path=fresh) as mem:
        mem.import_jsonl(export)
    outcomes = []
    for db in (source, fresh):
        with Mnemosyne(session_id="alpha", db_path=db) as mem:
            summary = next(m for m in mem.recall("hamburger menu") if m.kind == "summary")
            original = next(m for m in mem.timeline() if m.content.startswith("Alice proposed"))
            mem.forget(original.id)  # deletes completely: the summary stops quoting it
            unquoted = mem.get(summary.id).content
            mem.forget(summary.id)  # the facts it stood for come back into view
            kept = next(m for m in mem.timeline() if m.content.startswith("The staging database"))
            mem.forget(kept.id)  # the merged duplicate comes back into view
            outcomes.append((unquoted, sorted((m.content, m.status) for m in mem.timeline(limit=None))))
    assert "hamburger" not in outcomes[0][0]
    assert outcomes[1] == outcomes[0]
    statuses = dict(outcomes[0][1])
    assert statuses["Bob objected that nested menus hurt accessibility for screen readers."] == "active"
    assert statuses["The staging database password rotates monthly."] == "active"


def test_a_summary_keeps_its_sleeps_rule_after_import(tmp_path: Path):
    db, export, fresh = tmp_path / "all.db", tmp_path / "all.jsonl", tmp_path / "fresh.db"
    texts = ["The team discussed the new navigation bar layout for mobile screens.",
             "Alice proposed a hamburger menu with three nested levels of links.",
             "Bob objected that nested menus hurt accessibility for screen readers.",
             "Photographer books the studio for product shots."]
    with Mnemosyne(session_id="alpha", db_path=db) as mem:
        ids = [mem.remember(text, created_at=NOW - 5 * DAY + i * 60) for i, text in enumerate(texts)]
        mem.sleep(policy=SleepPolicy(consolidate="all", summary_max_sentences=1))
        mem.export_jsonl(export)
    with Mnemosyne(session_id="alpha", db_path=fresh) as mem:
        mem.import_jsonl(export)
        quoted = next(i for i in ids if mem.get(i).content in next(
            m for m in mem.recall("navigation menu", include_consolidated=True) if m.kind == "summary").content)
        mem.forget(quoted)
        # "all" made the summary stand for every event, quoted or not: it still does.
        assert {mem.get(i).status for i in ids if i != quoted} == {"consolidated"}


def test_an_older_export_does_not_bring_back_what_was_forgotten(slept: tuple[Path, Path], tmp_path: Path):
    _, export = slept
    lines = export.read_text(encoding="utf-8").splitlines()
    # The originals alone, as an export taken before sleep summarised them would hold.
    originals = tmp_path / "originals.jsonl"
    records = [json.loads(line) for line in lines[1:]]
    kept = [json.dumps(r) for r in records if r["type"] == "memory" and r["kind"] != "summary"]
    end = json.dumps({"type": "end", "records": len(kept)})
    originals.write_text("\n".join([lines[0], *kept, end]) + "\n", encoding="utf-8")
    db = tmp_path / "target.db"
    with Mnemosyne(session_id="alpha", db_path=db) as mem:
        mem.import_jsonl(originals)
        alice = next(m for m in mem.timeline() if m.content.startswith("Alice proposed"))
        mem.forget(alice.id)
        total = mem.get_stats().total

        added = mem.import_jsonl(export)  # brings the summaries, which quote Alice

        assert mem.get(alice.id) is None
        assert mem.get_stats().total == total + added
        summary = next(m for m in mem.recall("navigation bar", include_consolidated=True) if m.kind == "summary")
        assert "Bob objected" in summary.content and "hamburger" not in summary.content
        assert mem.import_jsonl(export) == 0 and mem.get(alice.id) is None


def test_what_was_forgotten_stays_forgotten_in_a_database_moved_by_export(tmp_path: Path):
    old_export, moved_export = tmp_path / "before-forget.jsonl", tmp_path / "after-forget.jsonl"
    with Mnemosyne(session_id="alpha", db_path=tmp_path / "a.db") as a:
        card = a.remember("The card number is 4111 1111 1111 1111")
        a.remember("The deploy window is Friday")
        a.export_jsonl(old_export)
        a.forget(card)
        a.export_jsonl(moved_export)
    records = [json.loads(line) for line in moved_export.read_text(encoding="utf-8").splitlines()]
    assert {"type": "forgotten", "id": card, "session_id": "alpha"} in records
    with Mnemosyne(session_id="alpha", db_path=tmp_path / "b.db") as b:
        assert b.import_jsonl(moved_export) == 1
        assert b.import_jsonl(old_export) == 0  # the old copy does not bring the card back
        assert b.get(card) is None and not b.recall("card number")
        b.export_jsonl(tmp_path / "again.jsonl")  # and the move after that carries it on
    assert f'"forgotten", "id": "{card}"' in (tmp_path / "again.jsonl").read_text(encoding="utf-8")
    # An import never deletes: a database that still holds the memory keeps it.
    with Mnemosyne(session_id="alpha", db_path=tmp_path / "c.db") as c:
        c.import_jsonl(old_export)
        assert c.import_jsonl(moved_export) == 0 and c.get(card) is not None


def test_sleep_behaves_the_same_after_import(slept: tuple[Path, Path], tmp_path: Path):
    source, export = slept
    fresh = tmp_path / "fresh.db"
    with Mnemosyne(db_path=fresh) as mem:
        mem.import_jsonl(export)
    reports = []
    for db in (source, fresh):
        with Mnemosyne(session_id="alpha", db_path=db) as mem:
            for i, text in enumerate(["Booked the rollout retrospective for Friday afternoon.",
                                      "Collected feedback from the on-call engineers about alerts.",
                                      "Drafted three action items about canary dashboards."]):
                mem.remember(text, created_at=NOW - 4 * DAY + i * 60)
            report = mem.sleep().to_dict()
            reports.append({k: v for k, v in report.items() if k not in ("id", "started_at", "finished_at", "seconds")})
    assert reports[1] == reports[0]
    assert reports[0]["summaries"] == 1  # the new episode only: nothing is summarised twice


def test_importing_again_or_over_part_of_it_duplicates_nothing(slept: tuple[Path, Path], tmp_path: Path):
    source, export = slept
    lines = export.read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines[1:]]
    # Part of the file: the first episode, the first memory, and one link with its ends.
    memories = [r for r in records if r["type"] == "memory"]
    first_link = next(r for r in records if r["type"] == "link")
    part_ids = {memories[0]["id"], first_link["src_id"], first_link["dst_id"]}
    part = [r for r in records if r["type"] == "episode"][:1] + [r for r in memories if r["id"] in part_ids] + [
        first_link]
    partial = write_jsonl(tmp_path / "part.jsonl", part, version=2)

    fresh = tmp_path / "fresh.db"
    with Mnemosyne(db_path=fresh) as mem:
        assert mem.import_jsonl(partial) == len(part_ids)
        assert mem.import_jsonl(export) == 14 - len(part_ids)
        assert mem.import_jsonl(export) == 0
    assert tables(fresh) == tables(source)
    with Mnemosyne(db_path=source) as mem:
        before = tables(source)
        assert mem.import_jsonl(export) == 0  # into the database it came from
    assert tables(source) == before


def test_a_database_synced_again_after_the_other_slept_folds_what_the_summary_stands_for(tmp_path: Path):
    texts = ["The team discussed the new navigation bar layout for mobile screens.",
             "Alice proposed a hamburger menu with three nested levels of links.",
             "Bob objected that nested menus hurt accessibility for screen readers.",
             "Carol asked for the footer links to move under the new navigation bar."]
    with Mnemosyne(session_id="s", db_path=tmp_path / "a.db", dedupe_window=0) as a:
        for i, text in enumerate(texts):
            a.remember(text, created_at=NOW - 5 * DAY + i * 60)
        a.export_jsonl(tmp_path / "before.jsonl")
    with Mnemosyne(session_id="s", db_path=tmp_path / "b.db") as b:
        assert b.import_jsonl(tmp_path / "before.jsonl") == 4
        edited = next(m for m in b.timeline() if m.content.startswith("Carol"))
        b.update(edited.id, content="Carol asked for the footer links to stay where they are.")
    with Mnemosyne(session_id="s", db_path=tmp_path / "a.db") as a:
        assert a.sleep(policy=SleepPolicy(keep_importance=1.1)).summaries == 1
        a.export_jsonl(tmp_path / "after.jsonl")
    with Mnemosyne(session_id="s", db_path=tmp_path / "b.db") as b:
        assert b.import_jsonl(tmp_path / "after.jsonl") == 1  # the summary
        statuses = {m.content[:5]: m.status for m in b.timeline()}
        # What the summary stands for is folded, as in the database that slept; a
        # memory edited here since is not what it quotes, and stays.
        assert statuses == {"The t": "consolidated", "Alice": "consolidated", "Bob o": "consolidated",
                            "Carol": "active"}
        assert [m.kind for m in b.recall("navigation bar menu", top_k=10)].count("summary") == 1
        assert not any(m.content.startswith(("Alice", "Bob")) for m in b.recall("navigation bar menu", top_k=10))


def test_a_kept_copy_edited_here_does_not_take_in_what_the_export_merged_into_it(tmp_path: Path):
    with Mnemosyne(session_id="s", db_path=tmp_path / "a.db") as a:
        kept = a.remember("Our staging cluster runs on eight nodes now", created_at=NOW - 5 * DAY)
        copy = a.remember("our staging cluster runs on eight nodes now!", created_at=NOW - 5 * DAY + 100)
        a.export_jsonl(tmp_path / "sync1.jsonl")
        with Mnemosyne(session_id="s", db_path=tmp_path / "b.db") as b:
            b.import_jsonl(tmp_path / "sync1.jsonl")
            b.update(kept, content="Our staging cluster runs on twelve nodes now")
            assert a.sleep(policy=SleepPolicy(min_episode_size=10)).merged == 1
            a.export_jsonl(tmp_path / "sync2.jsonl")
            b.import_jsonl(tmp_path / "sync2.jsonl")
            assert b.get(copy).status == "active"  # "twelve" does not say "eight"


def test_metadata_an_older_release_stored_deeper_than_today_allows_still_moves(tmp_path: Path):
    deep: Any = "bottom"
    for _ in range(150):
        deep = [deep]
    path = write_jsonl(tmp_path / "deep.jsonl", [record(metadata={"k": deep})])
    with Mnemosyne(session_id="beta", db_path=tmp_path / "db.db") as mem:
        assert mem.import_jsonl(path) == 1
        assert mem.get(record()["id"]).metadata == {"k": deep}


def test_a_session_id_an_earlier_release_allowed_longer_moves_with_every_line_of_its_session(tmp_path: Path):
    long_id = "agent:" + "x" * 294
    memory = {**record(id="0190aaaa-0000-7000-8000-000000000010", session_id=long_id, episode_id="ep"),
              "type": "memory"}
    episode = {"type": "episode", "id": "ep", "session_id": long_id, "label": "long",
               "started_at": "2020-01-02T00:00:00+00:00", "ended_at": "2020-01-02T05:00:00+00:00"}
    forgotten = {"type": "forgotten", "id": "0190aaaa-0000-7000-8000-0000000000ff", "session_id": long_id}
    path = write_jsonl(tmp_path / "long.jsonl", [episode, memory, forgotten], version=4)
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join([*lines, json.dumps({"type": "end", "records": 3})]) + "\n", encoding="utf-8")
    db = tmp_path / "new.db"
    with Mnemosyne(session_id="other", db_path=db) as mem:
        assert mem.import_jsonl(path) == 1
    with Mnemosyne(session_id=long_id, db_path=db) as mem:  # the database holds it now: it opens
        assert [m.content for m in mem.recall("otters")] == [memory["content"]]
        assert "long" in [e.label for e in mem.episodes()]


def test_a_bom_before_a_blank_line_or_alone_is_read_as_nothing_more(tmp_path: Path):
    bom_blank = tmp_path / "bom-blank.jsonl"
    bom_blank.write_text("\ufeff\n" + json.dumps(record()) + "\n", encoding="utf-8")
    bom_only = tmp_path / "bom-only.jsonl"
    bom_only.write_text("\ufeff", encoding="utf-8")
    with Mnemosyne(session_id="beta", db_path=tmp_path / "db.db") as mem:
        assert mem.import_jsonl(bom_blank) == 1
        with pytest.raises(InvalidInputError, match="is empty"):
            mem.import_jsonl(bom_only)


def test_the_wal_of_a_database_opened_through_a_symlink_is_no_export_target(tmp_path: Path):
    real = tmp_path / "real" / "m.db"
    real.parent.mkdir()
    link = tmp_path / "link.db"
    with Mnemosyne(session_id="s", db_path=real) as mem:
        mem.remember("kept safe")
    link.symlink_to(real)
    with Mnemosyne(session_id="s", db_path=link) as mem:
        with pytest.raises(InvalidInputError, match="this database"):
            mem.export_jsonl(f"{real}-wal")
        assert mem.recall("kept safe")


def link(**fields: Any) -> dict[str, Any]:
    base = {"type": "link", "src_id": "0190aaaa-0000-7000-8000-000000000002",
            "dst_id": "0190aaaa-0000-7000-8000-000000000001", "kind": "summarises",
            "run_id": None, "created_at": "2020-01-03T00:00:00+00:00"}
    base.update(fields)
    return base


def test_a_link_to_a_memory_in_neither_the_file_nor_the_database_imports_nothing(tmp_path: Path):
    summary = {**record(id="0190aaaa-0000-7000-8000-000000000002", kind="summary",
                        content="Summary: otters"), "type": "memory"}
    episode = {"type": "episode", "id": "ep-1", "session_id": "beta", "label": "otters",
               "started_at": "2020-01-02T00:00:00+00:00", "ended_at": None}
    path = write_jsonl(tmp_path / "dangling.jsonl", [episode, summary, link()], version=2)
    db = tmp_path / "db.db"
    with Mnemosyne(session_id="beta", db_path=db) as mem:
        with pytest.raises(InvalidInputError, match=f"{path}:4: the summarises link refers to memory "
                                                    "0190aaaa-0000-7000-8000-000000000001"):
            mem.import_jsonl(path)
        assert mem.get_stats().total == 0
        assert tables(db) == {"memories": [], "episodes": [], "memory_links": []}
        # Once the other end is stored, the same file imports, link and all.
        original = {**record(), "type": "memory"}
        assert mem.import_jsonl(write_jsonl(tmp_path / "original.jsonl", [original], version=2)) == 1
        assert mem.import_jsonl(path) == 1
        assert [(r["src_id"], r["kind"]) for r in tables(db)["memory_links"]] == [(summary["id"], "summarises")]
        assert [e.label for e in mem.episodes()] == [None]  # no member in it: the row alone is kept
        assert tables(db)["episodes"][0]["label"] == "otters"


def test_a_link_cannot_make_a_memory_that_is_no_summary_lose_text(tmp_path: Path):
    db = tmp_path / "db.db"
    with Mnemosyne(session_id="alpha", db_path=db) as alpha:
        private = alpha.remember("Ship on Friday. The approval came from the CFO.")
    quote = {**record(content="The approval came from the CFO."), "type": "memory"}
    claim = link(src_id=private, dst_id=quote["id"])  # "the private memory summarises the quote"
    with Mnemosyne(session_id="beta", db_path=db) as beta:
        beta.import_jsonl(write_jsonl(tmp_path / "claim.jsonl", [quote, claim], version=2))
        beta.forget(quote["id"])
    with Mnemosyne(session_id="alpha", db_path=db) as alpha:
        assert alpha.get(private).content == "Ship on Friday. The approval came from the CFO."


BAD_V2_LINES = {
    "unknown type": {"type": "comment", "text": "hi"},
    "no type": record(id="0190aaaa-0000-7000-8000-0000000000ff"),
    "misspelt field": {**record(id="0190aaaa-0000-7000-8000-0000000000ff"), "type": "memory", "episodeid": "x"},
    "strength 2": {**record(id="0190aaaa-0000-7000-8000-0000000000ff"), "type": "memory", "strength": 2},
    "occurrences 0": {**record(id="0190aaaa-0000-7000-8000-0000000000ff"), "type": "memory", "occurrences": 0},
    "access_count -1": {**record(id="0190aaaa-0000-7000-8000-0000000000ff"), "type": "memory", "access_count": -1},
    "duplicate memory id": {**record(id="0190aaaa-0000-7000-8000-000000000010"), "type": "memory"},
    "duplicate idempotency key": {**record(id="0190aaaa-0000-7000-8000-0000000000ff"), "type": "memory",
                                  "idempotency_key": "k0"},
    "episode without label": {"type": "episode", "id": "ep", "session_id": "beta",
                              "started_at": "2020-01-02T00:00:00+00:00"},
    "link kind": link(kind="quotes", src_id="0190aaaa-0000-7000-8000-000000000011",
                      dst_id="0190aaaa-0000-7000-8000-000000000010"),
    "link to itself": link(src_id="0190aaaa-0000-7000-8000-000000000010",
                           dst_id="0190aaaa-0000-7000-8000-000000000010"),
    "link bad time": link(src_id="0190aaaa-0000-7000-8000-000000000011",
                          dst_id="0190aaaa-0000-7000-8000-000000000010", created_at="soon"),
    "unshared text, not a key": {"type": "unshared", "key": "The staging password is hunter2."},
    "unshared without key": {"type": "unshared"},
}


@pytest.mark.parametrize("bad", BAD_V2_LINES.values(), ids=BAD_V2_LINES.keys())
def test_an_invalid_version_2_line_imports_nothing(tmp_path: Path, bad: Any) -> None:
    good = [{**record(id=f"0190aaaa-0000-7000-8000-00000000001{i}", content=f"good line {i}"),
             "type": "memory", "idempotency_key": f"k{i}"} for i in range(2)]
    episode = {"type": "episode", "id": "ep-good", "session_id": "beta", "label": "good",
               "started_at": "2020-01-02T00:00:00+00:00", "ended_at": None}
    fine_link = link(src_id=good[1]["id"], dst_id=good[0]["id"], kind="merges")
    path = write_jsonl(tmp_path / "bad.jsonl", [episode, *good, fine_link, bad], version=2)
    db = tmp_path / "target.db"
    with Mnemosyne(session_id="beta", db_path=db) as mem:
        with pytest.raises(InvalidInputError, match=f"{path}:6"):
            mem.import_jsonl(path)
    assert tables(db) == {"memories": [], "episodes": [], "memory_links": []}


def test_a_version_1_export_still_imports(tmp_path: Path) -> None:
    # As version 1 wrote a memory: Memory.to_dict() without score, explanation and access_count.
    old = {**record(), "context": []}
    path = write_jsonl(tmp_path / "v1.jsonl", [old])
    with Mnemosyne(session_id="beta", db_path=tmp_path / "db.db") as mem:
        assert mem.import_jsonl(path) == 1
        assert mem.get(old["id"]).content == old["content"]
        assert mem.import_jsonl(path) == 0


def test_an_idempotency_key_taken_by_another_memory_imports_nothing(tmp_path: Path) -> None:
    export = tmp_path / "keyed.jsonl"
    with Mnemosyne(session_id="s", db_path=tmp_path / "a.db") as mem:
        kept = mem.remember("Deploy approved", idempotency_key="deploy-42")
        mem.export_jsonl(export)
    with Mnemosyne(session_id="s", db_path=tmp_path / "b.db") as mem:
        # The key keeps making retries safe in the database it is imported into...
        assert mem.import_jsonl(export) == 1
        assert mem.remember("Deploy approved", idempotency_key="deploy-42") == kept
    with Mnemosyne(session_id="s", db_path=tmp_path / "c.db") as mem:
        # ...so a database that used it for something else refuses the file whole.
        mem.remember("Deploy rejected", idempotency_key="deploy-42")
        with pytest.raises(InvalidInputError, match=f"memory {kept}: idempotency_key 'deploy-42'"):
            mem.import_jsonl(export)
        assert mem.get_stats().total == 1


def test_an_idempotency_key_taken_here_is_refused_with_the_file_and_line_that_uses_it(tmp_path: Path) -> None:
    export = tmp_path / "keyed.jsonl"
    with Mnemosyne(session_id="s", db_path=tmp_path / "a.db") as mem:
        mem.remember("Standup moved to 10:00")
        mem.remember("Staging is frozen until Monday")
        keyed = mem.remember("Deploy approved", idempotency_key="deploy-42")
        mem.export_jsonl(export)
    line = next(number for number, text in enumerate(export.read_text(encoding="utf-8").splitlines(), 1)
                if keyed in text)
    with Mnemosyne(session_id="s", db_path=tmp_path / "b.db") as mem:
        mem.remember("Deploy rejected", idempotency_key="deploy-42")
        with pytest.raises(InvalidInputError) as info:
            mem.import_jsonl(export)
        assert str(info.value).startswith(f"{export}:{line}: memory {keyed}: idempotency_key 'deploy-42'")
        assert mem.get_stats().total == 1


def test_a_shared_memory_forgotten_is_not_shared_again_after_import(tmp_path: Path) -> None:
    db, export, fresh = tmp_path / "source.db", tmp_path / "all.jsonl", tmp_path / "fresh.db"
    text = "The staging database password rotates monthly."
    with Mnemosyne(session_id="a", db_path=db) as a, Mnemosyne(session_id="b", db_path=db) as b:
        a.remember(text)
        b.remember(text)
        a.sleep(policy=SHARING)
        a.forget(a.recall("staging password")[0].id)  # the shared memory: each keeps its own copy
        a.export_jsonl(export)
    unshared = [json.loads(line) for line in export.read_text().splitlines() if '"unshared"' in line]
    assert unshared == [{"type": "unshared", "key": sharing_key(text)}]  # a digest, never the text
    for _ in range(2):
        with Mnemosyne(session_id="a", db_path=fresh) as a:
            a.import_jsonl(export)
            assert a.sleep(policy=SHARING).promoted == 0  # not shared again here either
    with sqlite3.connect(fresh) as conn:
        recorded = conn.execute("SELECT count(*) FROM audit_log WHERE detail LIKE '%unshared%'").fetchone()[0]
    assert recorded == 1  # the second import added nothing
    with Mnemosyne(session_id="b", db_path=fresh) as b:
        assert [m.content for m in b.recall("staging password")] == [text]  # b's own copy


@pytest.mark.parametrize("cut", ["links and end", "end only", "after the end", "spliced"])
def test_an_export_cut_short_or_spliced_imports_nothing(slept: tuple[Path, Path], tmp_path: Path, cut: str) -> None:
    _, export = slept
    lines = export.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[-1]) == {"type": "end", "records": len(lines) - 2}
    damaged = {
        "links and end": lines[:-3],  # every line still valid JSON: cut at a line boundary
        "end only": lines[:-1],
        "after the end": [*lines, lines[1]],
        "spliced": [lines[0], *lines[2:]],  # a record taken out: the end line's count is wrong
    }[cut]
    path = tmp_path / "damaged.jsonl"
    path.write_text("\n".join(damaged) + "\n", encoding="utf-8")
    with Mnemosyne(db_path=tmp_path / "target.db") as mem:
        with pytest.raises(InvalidInputError, match="nothing was imported"):
            mem.import_jsonl(path)
    assert tables(tmp_path / "target.db") == {"memories": [], "episodes": [], "memory_links": []}


def test_merging_databases_that_hold_the_same_retried_write_keeps_its_links(tmp_path: Path) -> None:
    texts = ["Order 1182 shipped to the Lisbon warehouse", "Order 1183 packed for the Porto store",
             "Order 1184 packed for the Braga store"]
    when = [NOW - 5 * DAY + i * 60 for i in range(3)]
    with Mnemosyne(session_id="ops", db_path=tmp_path / "a.db") as a:
        a.remember(texts[0], idempotency_key="order-1182-shipped", created_at=when[0])
        for text, at in zip(texts[1:], when[1:], strict=True):
            a.remember(text, created_at=at)
        assert a.sleep(policy=SleepPolicy(consolidate="all")).summaries == 1
        a.export_jsonl(tmp_path / "a.jsonl")
    with Mnemosyne(session_id="ops", db_path=tmp_path / "b.db") as b:
        own = b.remember(texts[0], idempotency_key="order-1182-shipped", created_at=when[0])

        assert b.import_jsonl(tmp_path / "a.jsonl") == 3  # its copy of the keyed write is b's own

        (summary,) = [m for m in b.recall("order packed", include_consolidated=True) if m.kind == "summary"]
        b.forget(own)  # the summary's link reached b's copy: its quote goes with it
        assert "1182" not in b.get(summary.id).content


def test_closing_from_inside_an_export_lets_it_finish_and_keeps_recall_counts(tmp_path: Path) -> None:
    db, export = tmp_path / "m.db", tmp_path / "out.jsonl"
    mem = Mnemosyne(session_id="s", db_path=db)
    ids = [mem.remember(f"fact number {i} about deployments") for i in range(5)]

    def close_midway(done: int, total: int) -> None:
        if done == 2:
            mem.recall("deployments")  # counts waiting to be written
            mem.close()

    assert mem.export_jsonl(export, progress=close_midway) == 5
    with pytest.raises(MnemosyneError, match="closed"):
        mem.recall("deployments")
    with Mnemosyne(session_id="s", db_path=db) as again:
        assert {again.get(i).access_count for i in ids} == {1}


# -- where an export goes, and what an import takes ------------------------------------


def test_an_export_onto_the_database_or_a_folder_is_refused(source: Path, tmp_path: Path) -> None:
    before = source.read_bytes()[:16]
    (tmp_path / "folder").mkdir()
    with Mnemosyne(session_id="alpha", db_path=source) as mem:
        for target in (source, f"{source}-wal", tmp_path / "folder", f"{tmp_path}/missing-folder/"):
            with pytest.raises(InvalidInputError, match="this database|is a folder"):
                mem.export_jsonl(target)
        assert mem.get_stats().total == 8
    assert source.read_bytes()[:16] == before == b"SQLite format 3\x00"
    assert not (tmp_path / "missing-folder").exists()


def test_an_export_onto_another_database_or_a_backup_is_refused(source: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    with Mnemosyne(session_id="beta", db_path=other) as beta:
        beta.remember("a memory of another database")
    backup = create_backup(other, tmp_path / "other.bak")
    untouched = {path: path.read_bytes() for path in (other, tmp_path / "other.bak")}
    with Mnemosyne(session_id="alpha", db_path=source) as mem:
        with pytest.raises(InvalidInputError, match="is a SQLite database"):
            mem.export_jsonl(other)
        with pytest.raises(InvalidInputError, match="is a backup"):
            mem.export_jsonl(tmp_path / "other.bak")
    assert {path: path.read_bytes() for path in untouched} == untouched and backup.memory_count == 1


def test_an_export_over_a_private_file_keeps_it_private(source: Path, tmp_path: Path) -> None:
    private = tmp_path / "private.jsonl"
    private.write_text("old\n")
    private.chmod(0o600)
    modes_while_written = []

    def progress(done: int, total: int) -> None:
        modes_while_written.extend(f.stat().st_mode & 0o777 for f in tmp_path.glob(".private.jsonl.*"))

    with Mnemosyne(session_id="alpha", db_path=source) as mem:
        assert mem.export_jsonl(private, progress=progress) == 8
    assert modes_while_written and set(modes_while_written) == {0o600}
    assert private.stat().st_mode & 0o777 == 0o600
    assert private.read_text().startswith('{"format": "mnemosyne-jsonl"')


def test_a_killed_export_leaves_the_file_it_replaces_and_the_next_one_sweeps_its_copy(
    source: Path, tmp_path: Path
) -> None:
    target = tmp_path / "private.jsonl"
    target.write_text("old\n")
    target.chmod(0o600)
    killed = subprocess.run([sys.executable, "-c", (
        "import os, signal, sys\n"
        "from mnemosyne import Mnemosyne\n"
        "with Mnemosyne(session_id='alpha', db_path=sys.argv[1]) as mem:\n"
        "    mem.export_jsonl(sys.argv[2], progress=lambda done, total: os.kill(os.getpid(), signal.SIGKILL))\n"
    ), str(source), str(target)], check=False)
    assert killed.returncode == -signal.SIGKILL
    (left,) = tmp_path.glob(".private.jsonl.*")
    assert left.stat().st_mode & 0o777 == 0o600 and target.read_text() == "old\n"
    legacy = tmp_path / ".private.jsonl.4242.tmp"  # an earlier release's name for its copy
    legacy.write_text("{}")
    with Mnemosyne(session_id="alpha", db_path=source) as mem:
        assert mem.export_jsonl(target) == 8
    assert not list(tmp_path.glob(".private.jsonl.*"))


def test_two_threads_exporting_to_one_path_each_write_a_whole_export(source: Path, tmp_path: Path) -> None:
    target = tmp_path / "shared.jsonl"
    both_writing = threading.Barrier(2, timeout=10)

    def export(mem: Mnemosyne) -> int:
        return mem.export_jsonl(target, progress=lambda done, total: done == 1 and both_writing.wait())

    with Mnemosyne(session_id="alpha", db_path=source) as mem, ThreadPoolExecutor(2) as pool:
        counts = [future.result() for future in [pool.submit(export, mem) for _ in range(2)]]
    assert counts == [8, 8]
    with Mnemosyne(session_id="alpha", db_path=tmp_path / "copy.db") as copy:
        assert copy.import_jsonl(target) == 8


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full on this system")
def test_export_errors_are_typed(source: Path, tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")
    with Mnemosyne(session_id="alpha", db_path=source) as mem:
        with pytest.raises(DiskFullError, match="disk is full"):
            mem.export_jsonl("/dev/full")
        with pytest.raises(InvalidInputError, match="choose a path"):
            mem.export_jsonl(tmp_path / "a-file" / "export.jsonl")


@pytest.mark.skipif(not Path("/dev/shm").is_dir(), reason="no /dev/shm on this system")
def test_a_regular_file_under_dev_is_replaced_not_appended_to(source: Path, tmp_path: Path) -> None:
    path = Path("/dev/shm") / f"mnemosyne-test-{tmp_path.name}.jsonl"
    try:
        with Mnemosyne(session_id="alpha", db_path=source) as mem:
            mem.export_jsonl(path)
            mem.export_jsonl(path)
        assert path.read_text().count('"format"') == 1
        with Mnemosyne(session_id="alpha", db_path=tmp_path / "copy.db") as copy:
            assert copy.import_jsonl(path) == 8
    finally:
        path.unlink(missing_ok=True)


def test_an_empty_input_is_refused_not_read_as_no_memories(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with Mnemosyne(session_id="beta", db_path=tmp_path / "db.db") as mem:
        with pytest.raises(InvalidInputError, match="is empty"):
            mem.import_jsonl(empty)


def test_a_byte_order_mark_or_a_blank_line_before_the_header_is_read(source: Path, tmp_path: Path) -> None:
    exported = tmp_path / "out.jsonl"
    with Mnemosyne(session_id="alpha", db_path=source) as mem:
        mem.export_jsonl(exported)
    text = exported.read_text(encoding="utf-8")
    for name, variant in (("bom", "\ufeff" + text), ("blank", "\n" + text)):
        path = tmp_path / f"{name}.jsonl"
        path.write_text(variant, encoding="utf-8")
        with Mnemosyne(session_id="alpha", db_path=tmp_path / f"{name}.db") as copy:
            assert copy.import_jsonl(path) == 8


def test_json_nested_too_deep_to_parse_is_bad_input(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "deep.jsonl", ['{"metadata": ' + "[" * 100_000 + "]" * 100_000 + "}"])
    with Mnemosyne(session_id="beta", db_path=tmp_path / "db.db") as mem:
        with pytest.raises(InvalidInputError, match="deep.jsonl:2 is not valid JSON"):
            mem.import_jsonl(path)


class InterruptedAtBatch(HashEmbedder):
    """Ctrl-C (as Python delivers it) at its ``at``-th call, as a person watching a long
    import would press it."""

    def __init__(self, at: int) -> None:
        super().__init__()
        self.at = at

    def embed(self, texts):
        if self.calls + 1 == self.at:
            self.calls += 1
            raise KeyboardInterrupt
        return super().embed(texts)


def test_an_import_interrupted_while_embedding_is_committed_and_says_so(source: Path, tmp_path: Path) -> None:
    export = tmp_path / "out.jsonl"
    with Mnemosyne(session_id="alpha", db_path=source) as mem:
        mem.export_jsonl(export)
    reports: dict[str, list[tuple[int, int | None]]] = {"storing": [], "embedding": []}
    with Mnemosyne(session_id="alpha", db_path=tmp_path / "copy.db", embedder=InterruptedAtBatch(1)) as copy:
        with pytest.raises(ImportInterrupted) as interrupted:
            copy.import_jsonl(export, progress=lambda *r: reports["storing"].append(r),
                              embedding_progress=lambda *r: reports["embedding"].append(r))
        assert isinstance(interrupted.value, KeyboardInterrupt)  # a program still stops as it would
        assert (interrupted.value.imported, interrupted.value.waiting) == (8, 8)
        assert "the import is committed (8 new memories)" in str(interrupted.value)
        assert copy.get_stats().total == 8
        assert reports["storing"][-1] == (8, 8) and reports["embedding"] == [(0, 8)]
    with Mnemosyne(session_id="alpha", db_path=tmp_path / "copy.db", embedder=HashEmbedder()) as copy:
        assert copy.backfill_vectors() == 8


class CtrlCAsCommitReturns(sqlite3.Connection):
    """A connection that, once ``armed``, gets a real SIGINT as its next COMMIT returns:
    where Python raises a Ctrl-C pressed while SQLite was committing."""

    armed = False

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        cursor = super().execute(sql, *args)
        if sql == "COMMIT" and CtrlCAsCommitReturns.armed:
            CtrlCAsCommitReturns.armed = False
            signal.raise_signal(signal.SIGINT)  # Python's handler raises KeyboardInterrupt here
        return cursor


def test_an_import_interrupted_as_it_commits_is_kept_and_says_so(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    export = tmp_path / "out.jsonl"
    with Mnemosyne(session_id="alpha", db_path=source) as mem:
        mem.export_jsonl(export)
    connect = sqlite3.connect
    monkeypatch.setattr(sqlite3, "connect", lambda *a, **k: connect(*a, **k, factory=CtrlCAsCommitReturns))
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler

    def arm_when_stored(done: int, total: int | None) -> None:
        CtrlCAsCommitReturns.armed = done == total

    with Mnemosyne(session_id="alpha", db_path=tmp_path / "copy.db", embedder=HashEmbedder()) as copy:
        with pytest.raises(KeyboardInterrupt) as interrupted:  # as any Ctrl-C: the program stops
            copy.import_jsonl(export, progress=arm_when_stored)
        assert isinstance(interrupted.value, ImportInterrupted), "reported as if nothing was imported"
        assert (interrupted.value.imported, interrupted.value.waiting) == (8, 8)
        assert copy.get_stats().total == 8
        assert copy.backfill_vectors() == 8
        assert copy.import_jsonl(export) == 0  # nothing twice


def test_an_import_reports_its_embedding(source: Path, tmp_path: Path) -> None:
    export = tmp_path / "out.jsonl"
    with Mnemosyne(session_id="alpha", db_path=source) as mem:
        mem.export_jsonl(export)
    reports: list[tuple[int, int | None]] = []
    with Mnemosyne(session_id="alpha", db_path=tmp_path / "copy.db", embedder=HashEmbedder()) as copy:
        assert copy.import_jsonl(export, embedding_progress=lambda *r: reports.append(r)) == 8
    assert reports == [(0, 8), (8, 8)]
