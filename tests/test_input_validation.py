"""Values no datetime, float, SQLite integer or UTF-8 can hold: refused up front, typed.

Each case once stored something that broke later reads, or escaped as an untyped
OverflowError / UnicodeEncodeError / AttributeError. Now each is an
InvalidInputError and nothing is written.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mnemosyne import InvalidInputError, Mnemosyne
from mnemosyne.core.consolidation import SleepPolicy
from mnemosyne.core.dedup import DupRules
from mnemosyne.core.timeutil import LATEST

pytestmark = pytest.mark.usefixtures("lexical_only")  # validation, not ranking: no model

NAN = float("nan")
FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def mem(tmp_path: Path):
    with Mnemosyne(session_id="s", db_path=tmp_path / "m.db") as instance:
        instance.remember("existing memory about the deploy")
        yield instance


def contents(mem: Mnemosyne) -> list[str]:
    return [m.content for m in mem.timeline(limit=None)]


def assert_still_readable(mem: Mnemosyne, tmp_path: Path) -> None:
    """The reads an out-of-range time used to break for the whole session."""
    assert contents(mem) == ["existing memory about the deploy"]
    assert [m.content for m in mem.recall("deploy")] == ["existing memory about the deploy"]
    assert len(mem.episodes()) == 1
    assert mem.export_jsonl(tmp_path / "out.jsonl") == 1


# -- times a datetime cannot hold ------------------------------------------------------

@pytest.mark.parametrize(
    "field, value",
    [
        ("created_at", 1e20),
        pytest.param("created_at", 10**400, id="created_at-10**400"),  # too large even for a float
        ("created_at", -1e12),  # before year 1
        ("created_at", "9999-12-31T23:00:00-05:00"),  # year 10000 in UTC
        ("created_at", datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=5)))),  # year 0 in UTC
        ("valid_until", 1e300),
    ],
)
def test_times_outside_years_1_to_9999_are_refused(mem: Mnemosyne, tmp_path: Path, field: str, value: Any):
    with pytest.raises(InvalidInputError, match=f"{field}=.*years 1 to 9999") as info:
        mem.remember("far future note", **{field: value})
    assert repr(value)[:20] in str(info.value)
    assert_still_readable(mem, tmp_path)


def test_the_first_and_last_days_a_datetime_holds_are_accepted(mem: Mnemosyne):
    first = mem.remember("the first day", created_at="0001-01-01T00:00:00Z")
    last = mem.remember("the last day", created_at="9999-12-31T23:59:59Z", valid_until="9999-12-31T23:59:59.5Z")
    assert mem.get(first).created_at == datetime(1, 1, 1, tzinfo=timezone.utc)
    assert mem.get(last).created_at == datetime(9999, 12, 31, 23, 59, 59, tzinfo=timezone.utc)
    assert len(mem.timeline()) == 3
    # datetime.max, the usual "no upper bound", is a float that rounds up to year 10000.
    assert len(mem.timeline(until=datetime.max)) == 3
    very_last = mem.remember("the very last moment", created_at=datetime.max.replace(tzinfo=timezone.utc))
    assert mem.get(very_last).created_at.year == 9999
    assert mem.get(mem.remember("as Unix seconds", created_at=LATEST)).created_at.year == 9999


def test_times_are_kept_to_the_microsecond_near_today_and_within_16_farther_out(mem: Mnemosyne):
    # Stored as float seconds: exact under 2**33 seconds from 1970, as the docs say.
    for year, most in [(1, 4), (1000, 2), (1698, 0), (2026, 0), (2241, 0), (5000, 8), (9999, 16)]:
        given = datetime(year, 7, 1, 12, 34, 56, 987_654, tzinfo=timezone.utc)
        kept = mem.get(mem.remember(f"in the year {year}", created_at=given, allow_duplicate=True)).created_at
        assert abs(kept - given) <= timedelta(microseconds=most), (year, kept)
        assert [m.created_at for m in mem.timeline(since=kept, until=kept)] == [kept]  # its own time finds it


@pytest.mark.parametrize("field", ["created_at", "recorded_at", "valid_until"])
def test_import_refuses_out_of_range_times_and_imports_nothing(mem: Mnemosyne, tmp_path: Path, field: str):
    good = {
        "id": "0190aaaa-0000-7000-8000-000000000001", "content": "imported fact", "source": "import",
        "importance": 0.4, "scope": "session", "session_id": "s",
        "created_at": "2020-01-02T03:04:05+00:00", "recorded_at": "2020-01-02T03:04:06+00:00",
    }
    bad = {**good, "id": "0190aaaa-0000-7000-8000-000000000002", field: 1e20}
    path = tmp_path / "huge.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in (good, bad)) + "\n", encoding="utf-8")
    with pytest.raises(InvalidInputError, match=f"huge.jsonl:2: {field}=1e\\+20 is outside"):
        mem.import_jsonl(path)
    assert_still_readable(mem, tmp_path)


# -- a memory that stops being true before it happened ----------------------------------

@pytest.mark.parametrize("valid_until", ["2026-06-01", "2026-06-10"])  # before, and at, created_at
@pytest.mark.parametrize("many", [False, True], ids=["remember", "remember_many"])
def test_a_valid_until_not_after_created_at_is_refused(mem: Mnemosyne, valid_until: str, many: bool):
    fields = {"content": "the door code is 4411", "created_at": "2026-06-10", "valid_until": valid_until}
    with pytest.raises(InvalidInputError, match="valid_until 2026-06-.* is not after created_at 2026-06-10"):
        mem.remember_many(["a fine item", fields]) if many else mem.remember(**fields)
    assert contents(mem) == ["existing memory about the deploy"]


def test_a_valid_until_already_past_needs_the_created_at_it_follows(mem: Mnemosyne):
    with pytest.raises(InvalidInputError, match=r"\(now: created_at was not given\)"):
        mem.remember("the spring discount code is KESTREL10", valid_until="2020-05-01")
    # Said when it happened, a memory that has since stopped being true is history.
    offer = mem.remember("the spring discount code is KESTREL10", created_at="2020-03-01",
                         valid_until="2020-05-01")
    assert offer not in [m.id for m in mem.recall("discount code")]
    assert offer in [m.id for m in mem.recall("discount code", now="2020-04-01")]


def test_import_keeps_memories_earlier_releases_stored_expiring_before_they_happened(
    mem: Mnemosyne, tmp_path: Path
):
    # Earlier releases took such memories; an export of them must still move whole.
    line = {
        "id": "0190aaaa-0000-7000-8000-000000000003", "content": "old door code 1234", "source": "import",
        "importance": 0.4, "scope": "session", "session_id": "s",
        "created_at": "2026-06-10T00:00:00+00:00", "recorded_at": "2026-06-10T00:00:00+00:00",
        "valid_until": "2026-06-01T00:00:00+00:00",
    }
    path = tmp_path / "old.jsonl"
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    assert mem.import_jsonl(path) == 1
    assert mem.get(line["id"]).valid_until == datetime(2026, 6, 1, tzinfo=timezone.utc)


# -- remember_many given one item instead of a list ------------------------------------

@pytest.mark.parametrize("items", ["hello", b"hello", {"content": "the x"}])
def test_remember_many_refuses_a_single_string_or_dict(mem: Mnemosyne, items: Any):
    with pytest.raises(InvalidInputError, match="list of items.*remember_many\\(\\[item\\]\\)"):
        mem.remember_many(items)
    assert contents(mem) == ["existing memory about the deploy"]


# -- constructor arguments refused before the database is touched ----------------------

BAD_CONSTRUCTOR_ARGS = [
    ({"episode_gap": 0}, "episode_gap"),
    ({"episode_gap": NAN}, "episode_gap"),
    ({"episode_gap": float("inf")}, "episode_gap"),
    ({"auto_sleep": "yes"}, "auto_sleep"),
    ({"auto_sleep": NAN}, "auto_sleep"),
    ({"sleep_policy": "fast"}, "sleep_policy"),
    ({"embedder": "bogus-spec"}, "unknown embedder 'bogus-spec'"),
    ({"embedder": 5}, "embedder must be"),
    pytest.param({"dedupe_window": 10**400}, "dedupe_window", id="dedupe_window-10**400"),
    ({"busy_timeout": NAN}, "busy_timeout"),
    ({"session_id": "\ud800"}, "session_id contains a lone surrogate"),
    ({"session_id": "s" * 257}, "session_id is 257 characters long; the most is 256"),
]


@pytest.mark.parametrize("kwargs, message", BAD_CONSTRUCTOR_ARGS)
def test_bad_constructor_arguments_create_nothing(tmp_path: Path, kwargs: dict[str, Any], message: str):
    db = tmp_path / "new" / "folders" / "memories.db"
    with pytest.raises(InvalidInputError, match=message):
        Mnemosyne(db_path=db, **kwargs)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("kwargs, message", BAD_CONSTRUCTOR_ARGS)
def test_bad_constructor_arguments_leave_an_old_database_unmigrated(
    tmp_path: Path, kwargs: dict[str, Any], message: str
):
    db = tmp_path / "old.db"
    shutil.copy(FIXTURES / "schema_v1.db", db)
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    with pytest.raises(InvalidInputError, match=message):
        Mnemosyne(db_path=db, **kwargs)
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.db"]


def test_a_session_id_of_256_characters_is_a_session_and_a_longer_one_is_refused(tmp_path: Path):
    longest = "s" * 256
    with Mnemosyne(session_id=longest, db_path=tmp_path / "m.db", embedder="none") as mem:
        mem.remember("kept in the longest session there can be")
        assert [m.session_id for m in mem.timeline(session_id=longest)] == [longest]
        for read in (mem.timeline, mem.episodes):
            with pytest.raises(InvalidInputError, match="session_id is 1_000_000 characters long") as info:
                read(session_id="s" * 1_000_000)
            assert len(str(info.value)) < 300


def test_a_bad_embedder_in_the_environment_creates_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("MNEMOSYNE_EMBEDDER", "bogus-spec")
    with pytest.raises(InvalidInputError, match="unknown embedder"):
        Mnemosyne(db_path=tmp_path / "memories.db")
    assert list(tmp_path.iterdir()) == []


# -- numbers too large, NaN, and text UTF-8 cannot hold ---------------------------------

@pytest.mark.parametrize(
    "kwargs, message",
    [
        pytest.param({"importance": 10**400}, r"importance must be a number in \[0, 1\]", id="importance-10**400"),
        pytest.param({"created_at": 10**400}, "created_at=.*years 1 to 9999", id="created_at-10**400"),
        ({"content": "bad \ud800 text"}, "content contains a lone surrogate '\\\\ud800' at position 4"),
        ({"source": "\udc00"}, "source contains a lone surrogate"),
        ({"metadata": {"k": "\ud800"}}, "metadata contains a lone surrogate"),
        ({"metadata": {"\ud800": "key"}}, "metadata contains a lone surrogate"),
        ({"idempotency_key": "key-\ud800"}, "idempotency_key contains a lone surrogate"),
        # Deeper could be stored, but not exported and imported again.
        pytest.param({"metadata": {"k": json.loads("[" * 100 + "]" * 100)}}, "nested more than 100 deep",
                     id="metadata-101-deep"),
    ],
)
def test_unstorable_values_are_refused_and_nothing_is_stored(mem: Mnemosyne, kwargs: dict[str, Any], message: str):
    fields = {"content": "a new memory", **kwargs}
    with pytest.raises(InvalidInputError, match=message):
        mem.remember(**fields)
    with pytest.raises(InvalidInputError, match=message):
        mem.remember_many(["a fine item", fields])
    assert contents(mem) == ["existing memory about the deploy"]


def test_update_refuses_unstorable_values_and_changes_nothing(mem: Mnemosyne):
    memory_id = mem.timeline()[0].id
    for changes in ({"content": "\ud800"}, {"importance": 10**400}, {"metadata": {"k": "\udfff"}}):
        with pytest.raises(InvalidInputError):
            mem.update(memory_id, **changes)
    memory = mem.get(memory_id)
    assert (memory.content, memory.importance, memory.metadata) == ("existing memory about the deploy", 0.5, {})


@pytest.mark.parametrize("top_k", [10_001, 2**62, 10**20])
def test_recall_refuses_top_k_above_10_000(mem: Mnemosyne, top_k: int):
    with pytest.raises(InvalidInputError, match="top_k must be an integer from 1 to 10_000"):
        mem.recall("deploy", top_k=top_k)


def test_recall_accepts_top_k_10_000(mem: Mnemosyne):
    assert len(mem.recall("deploy", top_k=10_000)) == 1


def test_recall_refuses_a_query_utf8_cannot_hold(mem: Mnemosyne):
    with pytest.raises(InvalidInputError, match="query contains a lone surrogate"):
        mem.recall("deploy \ud800")


@pytest.mark.parametrize("limit", [1_000_001, 2**62, 10**20])
def test_timeline_refuses_a_limit_above_a_million(mem: Mnemosyne, limit: int):
    with pytest.raises(InvalidInputError, match="limit must be an integer from 1 to 1_000_000, or None"):
        mem.timeline(limit=limit)


@pytest.mark.parametrize("source", [5, 3.5, b"chat", [], (), ["chat", ""], ["chat", 5]])
def test_recall_refuses_a_source_filter_that_names_no_source(mem: Mnemosyne, source: Any):
    with pytest.raises(InvalidInputError, match="source"):
        mem.recall("deploy", source=source)


@pytest.mark.parametrize("value", ["false", "no", 0, 1, None])
@pytest.mark.parametrize("option", ["include_consolidated", "explain"])
def test_recall_options_are_true_or_false_not_truthy(mem: Mnemosyne, option: str, value: Any):
    with pytest.raises(InvalidInputError, match=f"{option} must be True or False"):
        mem.recall("deploy", **{option: value})


def test_sleep_and_doctor_options_are_true_or_false_not_truthy(mem: Mnemosyne):
    with pytest.raises(InvalidInputError, match="dry_run must be True or False"):
        mem.sleep(dry_run="no")
    with pytest.raises(InvalidInputError, match="repair must be True or False"):
        mem.doctor(repair="false")
    assert mem.get_stats().last_sleep_at is None


# -- sleep options -----------------------------------------------------------------------

@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"policy": "bad"}, "policy must be a mnemosyne.core.consolidation.SleepPolicy"),
        ({"summariser_timeout": NAN}, "summariser_timeout"),
        ({"summariser_timeout": float("inf")}, "summariser_timeout"),
        ({"summariser_timeout": 1e300}, "summariser_timeout"),  # too long for a thread to wait
        pytest.param({"summariser_timeout": 10**400}, "summariser_timeout", id="summariser_timeout-10**400"),
    ],
)
def test_sleep_refuses_bad_options_and_runs_nothing(mem: Mnemosyne, kwargs: dict[str, Any], message: str):
    with pytest.raises(InvalidInputError, match=message):
        mem.sleep(summariser=lambda texts: "summary", **kwargs)
    assert mem.get_stats().last_sleep_at is None


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"episode_gap": NAN}, "episode_gap must be a finite number"),
        ({"half_life_days": float("inf")}, "half_life_days must be a finite number"),
        ({"keep_importance": NAN}, "keep_importance must be a finite number"),
        ({"promote_importance": NAN}, "promote_importance must be a finite number"),
        ({"summarise_after": -1}, "summarise_after must be >= 0"),
        ({"abandoned_after": -1}, "abandoned_after must be >= 0"),
        ({"episode_gap": 0}, "episode_gap must be > 0"),
        ({"min_episode_size": 1}, "min_episode_size must be an integer >= 2"),
        ({"consolidate": "some"}, "consolidate must be 'represented' or 'all'"),
        # Accepted once, then a crash or a silent no-op inside sleep().
        ({"summary_max_chars": NAN}, "summary_max_chars must be an integer >= 1"),
        ({"summary_max_chars": -1}, "summary_max_chars must be an integer >= 1"),
        ({"summary_max_sentences": 0}, "summary_max_sentences must be an integer >= 1"),
        ({"promote_recurring": NAN}, "promote_recurring must be True or False"),
        ({"duplicates": {"jaccard": 0.9}}, "duplicates must be a DupRules"),
    ],
)
def test_sleep_policy_refuses_bad_fields_with_a_typed_error(kwargs: dict[str, Any], message: str):
    with pytest.raises(InvalidInputError, match=message):
        SleepPolicy(**kwargs)


@pytest.mark.parametrize("kwargs", [{"jaccard": NAN}, {"cosine": 1.5}, {"min_tokens": -1}])
def test_duplicate_rules_refuse_bad_fields(kwargs: dict[str, Any]):
    with pytest.raises(InvalidInputError, match="DupRules"):
        DupRules(**kwargs)


def test_sleep_policy_takes_numpy_numbers_and_wide_thresholds():
    policy = SleepPolicy(summary_max_chars=np.int64(500), min_info_words=np.int32(0), supersede=np.bool_(True),
                         episode_gap=np.float32(600), keep_importance=1.01,
                         duplicates=DupRules(cosine=np.float32(0.9), min_tokens=np.int64(0)))
    # Kept as plain numbers, so nothing downstream meets a NumPy scalar.
    assert type(policy.summary_max_chars) is int and type(policy.episode_gap) is float
    assert type(policy.duplicates.cosine) is float and type(policy.duplicates.min_tokens) is int


@pytest.mark.parametrize("flag", [True, np.bool_(True)])
def test_a_bool_is_not_a_number(mem: Mnemosyne, flag: Any):
    with pytest.raises(InvalidInputError, match="importance"):
        mem.remember("flagged", importance=flag)
    with pytest.raises(InvalidInputError, match="top_k"):
        mem.recall("deploy", top_k=flag)
    with pytest.raises(InvalidInputError, match="episode_gap"):
        SleepPolicy(episode_gap=flag)
    assert contents(mem) == ["existing memory about the deploy"]


def test_numpy_numbers_are_taken_wherever_a_number_is(mem: Mnemosyne):
    """Values read out of an array: SQLite cannot bind NumPy's scalars, so they must
    arrive as plain numbers."""
    when = np.int64(1_775_035_800)
    new = mem.remember("numpy note on the deploy", importance=np.float32(0.75), created_at=when)
    stored = mem.get(new)
    assert stored.importance == 0.75 and stored.created_at.timestamp() == 1_775_035_800
    assert len(mem.recall("deploy", top_k=np.int64(1))) == 1
    assert len(mem.timeline(limit=np.int32(1), since=np.float64(0))) == 1
    assert mem.recall("numpy note", context=np.int16(1))[0].id == new


def test_sleep_policy_still_takes_no_promotion_by_importance():
    assert SleepPolicy(promote_importance=None).promote_importance is None


def test_a_path_naming_an_unknown_user_is_invalid_input(tmp_path: Path):
    from mnemosyne.dr.recovery import create_backup

    unknown = "~no-such-user-of-mnemosyne/memories.db"
    with pytest.raises(InvalidInputError, match="no-such-user-of-mnemosyne"):
        Mnemosyne(db_path=unknown)
    with Mnemosyne(db_path=tmp_path / "m.db") as mem:
        with pytest.raises(InvalidInputError, match="no-such-user-of-mnemosyne"):
            mem.export_jsonl(unknown)
        with pytest.raises(InvalidInputError, match="is a folder"):
            mem.export_jsonl("~")  # the home folder
    with pytest.raises(InvalidInputError, match="no-such-user-of-mnemosyne"):
        create_backup(db_path=tmp_path / "m.db", backup_path=unknown)
