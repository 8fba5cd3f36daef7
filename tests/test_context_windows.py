"""Episode-context windows stay exactly what a full rebuild gives, and never leak.

A global memory's window holds its nearest *global* neighbours, which may be many
private events away; every write, sleep and undo must keep those windows current,
or forgotten and private text stays findable from other sessions.
"""

from __future__ import annotations

import sqlite3
import time
from contextlib import closing
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mnemosyne import InvalidInputError, Mnemosyne
from mnemosyne.core.consolidation import SleepPolicy
from mnemosyne.core.context import EVENT_CHARS, Event
from mnemosyne.core.context import windows as context_windows
from mnemosyne.storage.sqlite.context_index import refresh_all_contexts

HOUR = 3_600.0
DAY = 24 * HOUR
BASE = time.time() - 30 * DAY  # old enough for sleep to close every episode
TEXTS = ("the invoice vendor is Globex", "payment terms are net thirty days", "private note about Bluebird",
         "the staging server runs on port 8443", "Globex sent a new quote")


def windows(db: Path) -> tuple[dict[int, str], dict[int, str]]:
    """The stored windows, and the windows a rebuild from the rows would store."""
    with closing(sqlite3.connect(db)) as conn:
        conn.row_factory = sqlite3.Row
        stored = {row[0]: row[1] for row in conn.execute("SELECT rowid, context FROM memories_context_fts")}
        conn.execute("BEGIN")
        refresh_all_contexts(conn)
        rebuilt = {row[0]: row[1] for row in conn.execute("SELECT rowid, context FROM memories_context_fts")}
        conn.rollback()
    return stored, rebuilt


def everything(db: Path) -> dict[str, list[tuple]]:
    with closing(sqlite3.connect(db)) as conn:
        return {table: sorted(map(tuple, conn.execute(f"SELECT * FROM {table}")))
                for table in ("memories", "memory_links", "sleep_runs", "audit_log", "memories_context_fts")}


def context_hits(db: Path, word: str) -> list[int]:
    with closing(sqlite3.connect(db)) as conn:
        return [r[0] for r in conn.execute(
            "SELECT rowid FROM memories_context_fts WHERE memories_context_fts MATCH ?", (word,))]


@pytest.fixture
def agents(tmp_path: Path):
    db = tmp_path / "shared.db"
    a = Mnemosyne(session_id="alice", db_path=db, embedder="none", dedupe_window=0)
    b = Mnemosyne(session_id="bob", db_path=db, embedder="none", dedupe_window=0)
    yield a, b, db
    a.close()
    b.close()


def test_a_new_global_memory_joins_its_distant_global_neighbours_window(agents):
    a, b, db = agents
    a.remember("Invoice vendor is Globex.", scope="global", created_at=BASE)
    for i in range(4):
        a.remember(f"private note number {i}", created_at=BASE + 1 + i)
    a.remember("Payment terms are net thirty days.", scope="global", created_at=BASE + 10)
    stored, rebuilt = windows(db)
    assert stored == rebuilt
    found = {h.content: h.explanation["context"] for h in b.recall("Globex payment terms", explain=True)}
    assert found["Invoice vendor is Globex."] > 0  # found through its global neighbour's words


@pytest.mark.parametrize("change", ["forget", "update"])
def test_forgotten_or_edited_global_text_leaves_its_global_neighbours_window(agents, change):
    a, b, db = agents
    a.remember("Invoice vendor is Globex.", scope="global", created_at=BASE)
    secret = a.remember("Root password is swordfish42.", scope="global", created_at=BASE + 10)
    for i in range(5):  # events from in between, recorded later (imported, backfilled)
        a.remember(f"private note number {i}", created_at=BASE + 1 + i)
    if change == "forget":
        a.forget(secret)
    else:
        a.update(secret, content="Root password was rotated.")
    assert context_hits(db, "swordfish42") == []
    assert b.recall("swordfish42") == []
    stored, rebuilt = windows(db)
    assert stored == rebuilt


def test_sleep_promoting_a_memory_drops_its_private_neighbours_from_its_window(agents):
    a, b, db = agents
    a.remember("My bank PIN is 4921 and my secret codeword is xylophone.")
    a.remember("The staging server runs on port 8443.", importance=0.95)
    report = a.sleep(policy=SleepPolicy(promote_importance=0.9))
    assert report.promoted == 1
    assert b.recall("xylophone codeword") == []
    assert [m.content for m in b.recall("staging server")] == ["The staging server runs on port 8443."]
    assert windows(db)[0] == windows(db)[1]
    a.undo_sleep(report.id)
    assert windows(db)[0] == windows(db)[1]


def test_undo_refuses_to_overwrite_edits_made_since_and_changes_nothing(agents):
    a, _, db = agents
    for i, text in enumerate(["The team discussed the navigation bar layout for mobile screens.",
                              "Alice proposed a hamburger menu with three nested levels.",
                              "Bob objected that nested menus hurt screen readers.",
                              "They agreed to prototype a flat menu with five users."]):
        a.remember(text, created_at=BASE + i * 60)
    canonical = a.remember("The staging server is called atlas.", created_at=BASE - 10 * DAY, importance=0.3)
    a.remember("the staging server is called atlas", created_at=BASE - 9 * DAY, importance=0.4)
    report = a.sleep()
    assert report.merged == 1 and report.summaries == 1
    a.recall("staging server atlas")  # reading is no edit
    a.update(canonical, importance=0.2)
    before = everything(db)
    with pytest.raises(InvalidInputError, match=f"not undone.*{canonical}.*nothing was changed"):
        a.undo_sleep(report.id)
    assert everything(db) == before
    assert a.get(canonical).importance == 0.2


def test_undo_refuses_when_a_summary_it_made_was_edited(agents):
    a, _, db = agents
    for i in range(4):
        a.remember(f"checkout redesign step {i}: palette option {i}", created_at=BASE + i * 60)
    report = a.sleep()
    [summary] = [m for m in a.recall("checkout redesign palette") if m.kind == "summary"]
    a.update(summary.id, content="My own notes on the checkout redesign.")
    before = everything(db)
    with pytest.raises(InvalidInputError, match=summary.id):
        a.undo_sleep(report.id)
    assert everything(db) == before


def test_a_window_ends_where_its_session_fell_silent():
    events = [Event(1, "a", "global", BASE), Event(2, "b", "session", BASE + 10),
              Event(3, "c", "global", BASE + 20), Event(4, "d", "global", BASE + 20 + 2 * HOUR)]
    assert context_windows(events) == {1: "a\nc", 2: "a\nb\nc", 3: "a\nc", 4: "d"}


def test_a_window_holds_the_opening_of_a_long_event():
    document = "Pasted report on the billing outage. " + "x " * EVENT_CHARS + "Root cause: an expired certificate."
    events = [Event(1, "Can you read this?", "session", BASE), Event(2, document, "session", BASE + 10),
              Event(3, "Done, it is long.", "session", BASE + 20)]
    window = f"Can you read this?\n{document[:EVENT_CHARS]}\nDone, it is long."
    assert context_windows(events) == {1: window, 2: window, 3: window}


def test_a_long_memory_is_found_by_its_last_words_and_its_neighbours_are_not(agents):
    a, _, db = agents
    a.remember("Can you read this?", created_at=BASE)
    document = a.remember("Pasted report. " + "filler words " * EVENT_CHARS + "Root cause: an expired certificate.",
                          created_at=BASE + 10)
    a.remember("Done, it is long.", created_at=BASE + 20)
    assert [m.id for m in a.recall("expired certificate")] == [document]  # by its own text
    assert context_hits(db, "certificate") == []
    stored, rebuilt = windows(db)
    assert stored == rebuilt


def test_a_neighbour_from_hours_later_makes_no_result(agents):
    a, _, db = agents
    a.remember("The staging server crashed after its disk filled up.", created_at=BASE)
    a.remember("Lunch was pizza again.", created_at=BASE + 3 * HOUR)
    a.remember("Restarted it with a bigger volume.", created_at=BASE + 60)  # recorded late, told at once
    assert [m.content for m in a.recall("staging server crashed")] == [
        "The staging server crashed after its disk filled up.", "Restarted it with a bigger volume."]
    stored, rebuilt = windows(db)
    assert stored == rebuilt


OPS = st.one_of(
    st.tuples(st.just("remember"), st.sampled_from(["alice", "bob"]), st.sampled_from(["session", "global"]),
              st.sampled_from(range(len(TEXTS))), st.integers(0, 40), st.sampled_from([0.3, 0.95])),
    st.tuples(st.just("forget"), st.integers(0, 1000)),
    st.tuples(st.just("update"), st.integers(0, 1000), st.sampled_from(range(len(TEXTS)))),
    st.tuples(st.just("sleep"), st.sampled_from(["alice", "bob"])),
    st.tuples(st.just("undo")),
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(OPS, min_size=1, max_size=30))
def test_windows_always_equal_a_full_rebuild(tmp_path_factory, ops):
    db = tmp_path_factory.mktemp("w") / "m.db"
    promoting = SleepPolicy(promote_importance=0.9)  # windows after a promotion too
    sessions = {s: Mnemosyne(session_id=s, db_path=db, embedder="none", dedupe_window=0, sleep_policy=promoting)
                for s in ("alice", "bob")}
    stored: list[tuple[str, str]] = []  # (id, session that stored it)
    runs: list[str] = []
    try:
        for n, op in enumerate(ops):
            if op[0] == "remember":
                _, session, scope, text, step, importance = op
                # Repeated texts let sleep merge (moving created_at) and promote recurring ones;
                # 10-minute steps bring silences of over an hour, where windows end.
                memory_id = sessions[session].remember(
                    TEXTS[text], scope=scope, importance=importance, created_at=BASE + step * 600)
                stored.append((memory_id, session))
            elif op[0] == "forget" and stored:
                memory_id, session = stored.pop(op[1] % len(stored))
                sessions[session].forget(memory_id)
            elif op[0] == "update" and stored:
                memory_id, session = stored[op[1] % len(stored)]
                sessions[session].update(memory_id, content=f"{TEXTS[op[2]]} revised {n}")
            elif op[0] == "sleep":
                report = sessions[op[1]].sleep()
                if report.changed_rows:
                    runs.append(report.id)
            elif op[0] == "undo" and runs:
                before = everything(db)
                try:
                    sessions["alice"].undo_sleep(runs.pop())
                except InvalidInputError:
                    assert everything(db) == before
            current, rebuilt = windows(db)
            assert current == rebuilt, f"after {op}"
    finally:
        for mem in sessions.values():
            mem.close()
