"""Bad input: a typed error that says what to do, and nothing written."""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

import pytest

from mnemosyne import (
    InvalidInputError,
    MissingDependencyError,
    Mnemosyne,
    MnemosyneError,
    NotADatabaseError,
    SchemaVersionError,
)


def fingerprint(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def mem(tmp_path: Path):
    with Mnemosyne(session_id="s", db_path=tmp_path / "m.db") as instance:
        instance.remember("existing memory")
        yield instance


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"content": ""}, "empty"),
        ({"content": "   \n\t"}, "empty"),
        ({"content": 42}, "must be a string"),
        ({"content": None}, "must be a string"),
        ({"content": "x", "importance": 1.5}, r"\[0, 1\]"),
        ({"content": "x", "importance": -0.1}, r"\[0, 1\]"),
        ({"content": "x", "importance": float("nan")}, r"\[0, 1\]"),
        ({"content": "x", "importance": "high"}, "number"),
        ({"content": "x", "scope": "team"}, "'session' or 'global'"),
        ({"content": "x", "metadata": {"when": object()}}, "JSON"),
        ({"content": "x", "metadata": {1: "int key"}}, "round-trip"),
        ({"content": "x", "metadata": {"v": float("inf")}}, "JSON"),
        ({"content": "x", "metadata": ["not", "a", "dict"]}, "dict"),
        ({"content": "x", "source": ""}, "source"),
        ({"content": "x", "created_at": "last tuesday"}, "ISO 8601"),
    ],
)
def test_remember_rejects_bad_input_and_writes_nothing(mem: Mnemosyne, kwargs, message):
    before = mem.get_stats().total
    with pytest.raises(InvalidInputError, match=message) as info:
        mem.remember(**kwargs)
    assert isinstance(info.value, ValueError) and isinstance(info.value, MnemosyneError)
    assert mem.get_stats().total == before


@pytest.mark.parametrize("top_k", [0, -3, 2.5, "10", True])
def test_recall_rejects_bad_top_k(mem: Mnemosyne, top_k):
    with pytest.raises(InvalidInputError, match="top_k"):
        mem.recall("existing", top_k=top_k)


@pytest.mark.parametrize("query", ["", "   ", None, 3])
def test_recall_rejects_empty_or_non_text_queries(mem: Mnemosyne, query):
    with pytest.raises(InvalidInputError, match="query"):
        mem.recall(query)


def test_recall_rejects_bad_filters(mem: Mnemosyne):
    with pytest.raises(InvalidInputError, match="scope"):
        mem.recall("existing", scope="everyone")
    with pytest.raises(InvalidInputError, match="since is after until"):
        mem.recall("existing", since="2026-02-01", until="2026-01-01")


def test_update_rejects_bad_values_and_changes_nothing(mem: Mnemosyne):
    memory_id = mem.remember("keep me", importance=0.3)
    with pytest.raises(InvalidInputError):
        mem.update(memory_id, content="  ")
    with pytest.raises(InvalidInputError):
        mem.update(memory_id, importance=7)
    memory = mem.get(memory_id)
    assert (memory.content, memory.importance) == ("keep me", 0.3)


def test_db_path_that_is_a_directory(tmp_path: Path):
    with pytest.raises(InvalidInputError, match="names a directory"):
        Mnemosyne(db_path=tmp_path)


@pytest.mark.parametrize("typed", ["data/", "data" + os.sep])
def test_db_path_that_ends_as_a_folder_is_refused_and_makes_no_file(tmp_path: Path, monkeypatch, typed: str):
    # A path library drops the trailing separator: the file would be named after the folder.
    with pytest.raises(InvalidInputError, match="names a directory"):
        Mnemosyne(db_path=f"{tmp_path}/{typed}")
    monkeypatch.setenv("MNEMOSYNE_DB", f"{tmp_path}/{typed}")
    with pytest.raises(InvalidInputError, match="MNEMOSYNE_DB .* names a directory"):
        Mnemosyne()
    assert list(tmp_path.iterdir()) == []


def test_db_path_that_is_not_a_database(tmp_path: Path):
    notes = tmp_path / "notes.txt"
    notes.write_text("my precious notes\n" * 100)
    before = fingerprint(notes)
    with pytest.raises(NotADatabaseError, match="not a SQLite database"):
        Mnemosyne(db_path=notes)
    assert fingerprint(notes) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_database_from_a_newer_mnemosyne_is_refused_unchanged(tmp_path: Path):
    import sqlite3

    db = tmp_path / "future.db"
    Mnemosyne(db_path=db).close()
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA user_version = 999")
        conn.execute("PRAGMA journal_mode = DELETE")  # a newer release may journal otherwise
    before = db.read_bytes()
    with pytest.raises(SchemaVersionError, match="upgrade Mnemosyne") as info:
        Mnemosyne(db_path=db)
    assert info.value.schema_version == 999
    assert db.read_bytes() == before


def test_closed_instance_refuses_work(tmp_path: Path):
    mem = Mnemosyne(db_path=tmp_path / "m.db")
    mem.close()
    with pytest.raises(MnemosyneError, match="closed"):
        mem.remember("too late")


def test_an_error_does_not_echo_a_megabyte_of_input(tmp_path: Path):
    huge = "x" * 1_000_000
    with Mnemosyne(db_path=tmp_path / "m.db") as mem:
        for call in (lambda: mem.forget(huge), lambda: mem.remember("note", scope=huge)):
            with pytest.raises(MnemosyneError) as info:
                call()
            assert len(str(info.value)) < 500 and "1000000 characters" in str(info.value)


def test_the_sentence_transformers_embedder_names_the_package_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    # No extra of ours holds it (one would pull torch): the hint names the package itself.
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # its import fails, as when missing
    with pytest.raises(MissingDependencyError) as caught:
        Mnemosyne(db_path=tmp_path / "m.db", embedder="sentence-transformers:all-MiniLM-L6-v2")
    assert str(caught.value).endswith("needs the 'sentence-transformers' package: pip install sentence-transformers")
    assert caught.value.package == "sentence-transformers" and caught.value.extra is None
    assert not (tmp_path / "m.db").exists()
