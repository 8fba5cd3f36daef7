"""Retried and repeated writes return the memory already stored."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest

from mnemosyne import InvalidInputError, Mnemosyne
from mnemosyne.core.consolidation import SleepPolicy


@pytest.fixture
def mem(tmp_path: Path):
    with Mnemosyne(session_id="a", db_path=tmp_path / "m.db") as instance:
        yield instance


def audit_ops(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        return [op for (op,) in conn.execute("SELECT op FROM audit_log WHERE memory_id IS NOT NULL")]


def test_same_idempotency_key_returns_the_first_id(mem: Mnemosyne):
    first = mem.remember("deploy approved", idempotency_key="req-1", allow_duplicate=True)
    again = mem.remember("deploy approved", idempotency_key="req-1", allow_duplicate=True)
    assert again == first
    assert mem.get_stats().total == 1
    assert audit_ops(mem.db_path) == ["remember"]


def test_key_reused_for_different_content_is_refused(mem: Mnemosyne):
    mem.remember("deploy approved", idempotency_key="req-1")
    with pytest.raises(InvalidInputError, match="req-1.*already used"):
        mem.remember("deploy cancelled", idempotency_key="req-1")
    assert mem.get_stats().total == 1


def test_a_key_taken_by_another_sessions_private_memory_does_not_name_it(mem: Mnemosyne):
    private = mem.remember("Ship on Friday; the CFO approved.", idempotency_key="order-1182")
    with Mnemosyne(session_id="b", db_path=mem.db_path) as stranger:
        with pytest.raises(InvalidInputError, match="already used for a different memory of another session") as info:
            stranger.remember("anything", idempotency_key="order-1182")
    assert private not in str(info.value) and "'a'" not in str(info.value)
    with pytest.raises(InvalidInputError, match=private):  # its own session is told which
        mem.remember("something else", idempotency_key="order-1182")


def test_key_retried_from_another_instance_and_session(tmp_path: Path, mem: Mnemosyne):
    first = mem.remember("shared fact", scope="global", idempotency_key="k")
    with Mnemosyne(session_id="a", db_path=mem.db_path) as other:
        assert other.remember("shared fact", scope="global", idempotency_key="k") == first
    with Mnemosyne(session_id="b", db_path=mem.db_path) as stranger, pytest.raises(InvalidInputError):
        stranger.remember("shared fact", scope="global", idempotency_key="k")


def test_remember_many_accepts_keys_and_one_bad_item_stores_nothing(mem: Mnemosyne):
    def item(content: str, key: str) -> dict[str, str]:
        return {"content": content, "idempotency_key": key}

    ids = mem.remember_many([item("one", "k1"), item("two", "k2")])
    retried = mem.remember_many([item("two", "k2"), item("three", "k3")])
    assert retried[0] == ids[1] and retried[1] not in ids
    with pytest.raises(InvalidInputError):
        mem.remember_many([item("four", "k4"), item("other", "k1")])
    assert mem.get_stats().total == 3
    with pytest.raises(InvalidInputError, match="idempotency_key"):
        mem.remember("x", idempotency_key="")
    # One key for two texts in one batch: refused before anything is stored, naming the
    # items (the first of them is not stored, so it has no id to name).
    with pytest.raises(InvalidInputError, match="items 0 and 2 share idempotency_key 'k5'"):
        mem.remember_many([item("five", "k5"), item("six", "k6"), item("not five", "k5")])
    assert mem.get_stats().total == 3
    assert len(set(mem.remember_many([item("seven", "k7"), item("seven", "k7")]))) == 1  # a retry in a batch


def test_threads_racing_on_one_key_store_it_once(mem: Mnemosyne):
    results: list[str] = []
    def worker() -> None:
        for _ in range(20):
            results.append(mem.remember("raced write", idempotency_key="race", allow_duplicate=True))
    threads = [threading.Thread(target=worker) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(results)) == 1 and len(results) == 120
    assert mem.get_stats().total == 1


def test_identical_content_within_the_window_is_not_stored_twice(mem: Mnemosyne):
    first = mem.remember("The user prefers dark mode.")
    assert mem.remember("The user prefers  dark mode.\n") == first  # spacing ignored
    assert mem.remember_many(["The user prefers dark mode.", "new fact"])[0] == first
    # Text new to the database, repeated within one batch, is stored once too.
    once, _, again = mem.remember_many(["Deploy is at noon.", "ok", "Deploy is at  noon."])
    assert again == once
    assert mem.get_stats().total == 4


def test_a_write_differing_only_in_case_is_stored(mem: Mnemosyne):
    # "Hunter2" is another password than "hunter2": returning the old id would lose it.
    first = mem.remember("Password: hunter2")
    changed = mem.remember("Password: Hunter2")
    assert changed != first
    upper, lower = mem.remember_many(["token ABCdef", "token abcDEF"])
    assert upper != lower
    assert {m.content for m in mem.recall("password", top_k=5)} >= {"Password: hunter2", "Password: Hunter2"}
    keyed = mem.remember("Deploy key is XyZ", idempotency_key="k")
    with pytest.raises(InvalidInputError, match="already used"):  # a retry sends the same text
        mem.remember("Deploy key is xyz", idempotency_key="k")
    assert mem.remember("Deploy key is  XyZ", idempotency_key="k") == keyed
    with pytest.raises(InvalidInputError, match="items 0 and 1 share idempotency_key"):  # nothing stored
        mem.remember_many([{"content": "Key is AbC", "idempotency_key": "b"},
                           {"content": "Key is abc", "idempotency_key": "b"}])
    assert mem.get_stats().total == 5


def test_a_replayed_history_keeps_every_event(mem: Mnemosyne):
    # The same words at two given times are two events, not a retry.
    first, _, again = mem.remember_many([
        {"content": "User: yes", "created_at": "2026-03-01T09:00:00Z"},
        {"content": "Agent: shall I deploy to staging?", "created_at": "2026-03-01T09:05:00Z"},
        {"content": "User: yes", "created_at": "2026-03-01T09:06:00Z"},
    ])
    assert again != first
    assert mem.remember("User: yes", created_at="2026-03-01T09:00:00Z") == first  # a true retry
    assert mem.remember("User: yes") not in (first, again)  # said now: a third event
    assert mem.get_stats().total == 4


def test_a_write_inside_an_episode_is_not_a_repeat_of_one_outside(mem: Mnemosyne):
    outside = mem.remember("Agent: shall I deploy to staging?")
    with mem.episode("deploy"):
        inside = mem.remember("Agent: shall I deploy to staging?")
        assert mem.remember("Agent: shall I deploy to staging?") == inside
    assert inside != outside
    assert ("deploy", 1) in [(e.label, e.size) for e in mem.episodes()]


def test_duplicates_are_stored_when_asked_or_when_they_differ_in_scope(mem: Mnemosyne):
    first = mem.remember("repeat me")
    assert mem.remember("repeat me", allow_duplicate=True) != first
    assert mem.remember("repeat me", scope="global") != first
    assert mem.remember_many([{"content": "repeat me", "allow_duplicate": True}])[0] != first
    with Mnemosyne(session_id="other", db_path=mem.db_path) as other:
        assert other.remember("repeat me") != first  # another session's memory
    assert mem.get_stats().total == 5
    with pytest.raises(InvalidInputError, match="allow_duplicate"):
        mem.remember("x", allow_duplicate="yes")


def test_a_retry_after_sleep_made_the_first_copy_global_returns_it(mem: Mnemosyne):
    first = mem.remember("Production deploys need two approvals from the platform team", importance=0.95)
    mem.sleep(policy=SleepPolicy(promote_importance=0.9))  # between the attempt and its retry: promoted
    assert mem.get(first).scope == "global"
    assert mem.remember("Production deploys need two approvals from the platform team", importance=0.95) == first
    assert mem.get_stats().total == 1


def test_a_value_said_again_after_sleep_replaced_it_is_stored_as_current(mem: Mnemosyne):
    # Friday, then Tuesday (sleep marks Friday superseded), then Friday again within the
    # window: a change back, not a retry. Returning the superseded id would lose it.
    friday = mem.remember("The deploy window is Friday evening.")
    mem.remember("The deploy window is Tuesday morning.")
    assert mem.sleep().superseded == 1
    again = mem.remember("The deploy window is Friday evening.")
    assert again != friday
    assert mem.get(again).status == "active"
    mem.sleep()
    assert [m.content for m in mem.recall("deploy window", top_k=1)] == ["The deploy window is Friday evening."]


def test_a_retry_after_sleep_merged_the_first_attempt_returns_it(mem: Mnemosyne):
    # Condensed, it still stands for itself through the copy kept: a retry (or a
    # replayed history) is no new copy for every later sleep to fold in again.
    kept = mem.remember("The staging server crashed during the billing deploy")
    again = mem.remember("Reminder: the staging server crashed during the billing deploy")
    for _ in range(3):
        mem.sleep()
        assert mem.get(again).status == "consolidated"
        assert mem.remember("Reminder: the staging server crashed during the billing deploy") == again
    assert mem.get_stats().total == 2
    assert mem.get(kept).status == "active"


def test_a_retry_after_sleep_merged_a_more_important_repeat_into_it_returns_it(mem: Mnemosyne):
    # The merge raised the kept copy to its repeat's importance: the retry of the first
    # write, at the importance it gave, still repeats that copy.
    text = "Ran `ruff check pyproject.toml`: no issues"
    first = mem.remember(text, source="shell", importance=0.2, created_at="2026-12-01T10:00Z")
    mem.remember(text, source="shell", importance=0.3, created_at="2026-12-01T10:05Z")
    assert mem.sleep().merged == 1
    assert mem.get(first).importance == 0.3

    assert mem.remember(text, source="shell", importance=0.2, created_at="2026-12-01T10:00Z") == first
    assert mem.get_stats().total == 2
    assert [m.id for m in mem.recall("ruff check pyproject", top_k=5)] == [first]


def test_a_less_important_write_repeats_no_copy_that_was_stored_more_important(mem: Mnemosyne):
    # No merge raised it: the stored copy was written that important, so a write of
    # the same text at another importance is another write, stored.
    text = "Ran `ruff check pyproject.toml`: no issues"
    first = mem.remember(text, importance=0.3)
    mem.remember("Ran `ruff check src`: no issues", importance=0.2)
    mem.sleep()
    assert mem.remember(text, importance=0.2) != first
    assert mem.get_stats().total == 3


def test_the_window_is_configurable(tmp_path: Path):
    with Mnemosyne(db_path=tmp_path / "m.db", dedupe_window=0.2) as mem:
        first = mem.remember("heartbeat ok")
        assert mem.remember("heartbeat ok") == first
        time.sleep(0.3)
        assert mem.remember("heartbeat ok") != first
    with Mnemosyne(db_path=tmp_path / "m.db", dedupe_window=0) as mem:
        assert mem.remember("heartbeat ok") != mem.remember("heartbeat ok")
    for bad in (-1, float("nan"), "5", True):
        with pytest.raises(InvalidInputError, match="dedupe_window"):
            Mnemosyne(db_path=tmp_path / "m.db", dedupe_window=bad)
