"""The time a query names: which span of creation times recall favours."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from mnemosyne import Mnemosyne
from mnemosyne.core.consolidation import SleepPolicy
from mnemosyne.core.temporal import time_window
from mnemosyne.testing import HashEmbedder

NOW = datetime(2024, 3, 20, 15, 30, tzinfo=timezone.utc)  # a Wednesday


def day(month: int, day: int, year: int = 2024) -> datetime:
    return datetime(year, month, day, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        # A full date: a week before it (plans) to two weeks after (retellings).
        ("what happened on May 8, 2023", day(5, 1, 2023), day(5, 22, 2023)),
        ("what happened on 8 May, 2023", day(5, 1, 2023), day(5, 22, 2023)),
        ("the photo from December 1,2023", day(11, 24, 2023), day(12, 15, 2023)),
        ("notes of 2023-05-08", day(5, 1, 2023), day(5, 22, 2023)),
        ("the log at 2023-05-08T10:00", day(5, 1, 2023), day(5, 22, 2023)),
        ("in May 2023", day(5, 1, 2023), day(6, 15, 2023)),
        ("during May of 2022", day(5, 1, 2022), day(6, 15, 2022)),
        # A day without a year is its latest occurrence up to now.
        ("on March 3rd", day(2, 25), day(3, 17)),
        ("what happened on May 2", day(4, 25, 2023), day(5, 16, 2023)),  # in the past tense, though near ahead
        ("what we did on may 2", day(4, 25, 2023), day(5, 16, 2023)),
        ("what we did on 2 may", day(4, 25, 2023), day(5, 16, 2023)),
        ("the 8 may 2023 release", day(5, 1, 2023), day(5, 22, 2023)),
        ("the may 8, 2023 release", day(5, 1, 2023), day(5, 22, 2023)),
        ("what was said at the 2nd may meeting", day(4, 25, 2023), day(5, 16, 2023)),
        ("the 4th of July party", day(6, 27, 2023), day(7, 18, 2023)),
        ("where did I fly on Valentine's day", day(2, 7), day(2, 28)),
        ("what did we eat at christmas", day(12, 18, 2023), day(1, 8)),
        ("the gift on Christmas Eve 2021", day(12, 17, 2021), day(1, 7, 2022)),
        ("new year\u2019s eve plans", day(12, 24, 2023), day(1, 14)),
        # Days relative to today.
        ("what did I do yesterday", day(3, 19), day(3, 20)),
        ("the day before yesterday", day(3, 18), day(3, 19)),
        ("On may 2, what did we ship?", day(4, 25, 2023), day(5, 16, 2023)),
        ("in June's retro", day(6, 1, 2023), day(7, 16, 2023)),  # a month written out is one
        ("what did we decide last night", day(3, 19), day(3, 21)),
        ("this morning's standup", day(3, 20), day(3, 21)),
        ("today's plan", day(3, 20), day(3, 21)),
        ("last Friday's retro", day(3, 15), day(3, 16)),
        ("what was said on Wednesday", day(3, 13), day(3, 14)),  # today is one: a week ago
        ("on Saturday morning", day(3, 16), day(3, 17)),
        ("last fri", day(3, 15), day(3, 16)),
        ("what we did on Tues", day(3, 19), day(3, 20)),
        ("this Monday", day(3, 18), day(3, 19)),  # this week's
        ("last weekend", day(3, 16), day(3, 18)),
        ("over the weekend", day(3, 16), day(3, 18)),
        # Spans relative to today.
        ("3 days ago", day(3, 16), day(3, 18)),  # that day or the one before, as counted loosely
        ("1 day ago", day(3, 18), day(3, 20)),  # not today...
        ("0 days ago", day(3, 19), day(3, 21)),  # ...unless it is the day named
        ("2 weeks ago", day(2, 28) + timedelta(hours=12), day(3, 12) + timedelta(hours=12)),
        ("last week", day(3, 10), day(3, 21)),  # the calendar week before (from Monday the 11th), and since
        ("in the past month", day(2, 18), day(3, 21)),
        ("the week before last", day(3, 3), day(3, 11)),  # the calendar week before that, with its eve
        ("in the last week", day(3, 12), day(3, 21)),  # the past seven days
        ("the month before last", day(1, 1), day(2, 15)),
        ("the year before last", day(1, 1, 2022), day(1, 1, 2023)),
        ("this week", day(3, 18), day(3, 21)),
        ("this month", day(3, 1), day(3, 21)),
        ("earlier this year", day(1, 1), day(3, 21)),
        ("in June", day(6, 1, 2023), day(7, 16, 2023)),
        ("in March", day(3, 1), day(4, 15)),
        ("in mid-March", day(3, 1), day(4, 15)),
        ("in early June", day(6, 1, 2023), day(7, 16, 2023)),
        ("last March", day(3, 1, 2023), day(4, 15, 2023)),
        ("last February", day(2, 1), day(3, 17)),
        ("in 2022", day(1, 1, 2022), day(1, 1, 2023)),
        # Calendar units before this one, and "since": from then until now.
        ("what did we ship last month", day(2, 1), day(3, 17)),
        ("the offsite last year", day(1, 1, 2023), day(1, 1)),
        ("everything since February", day(2, 1), day(3, 21)),
        ("since 2022", day(1, 1, 2022), day(3, 21)),
        ("what failed since yesterday", day(3, 19), day(3, 21)),
        ("since last Friday", day(3, 15), day(3, 21)),
        ("since May 2023", day(5, 1, 2023), day(3, 21)),
        ("since March", day(3, 1), day(3, 21)),
        ("what happened since Monday", day(3, 18), day(3, 21)),
        ("since March 3", day(3, 3), day(3, 21)),  # from the day itself, not the week its span adds
        ("since 2 hours ago", NOW - timedelta(hours=2), day(3, 21)),
        # Hours before now, counted loosely; parts of today are today.
        ("an hour ago", NOW - timedelta(hours=2), NOW),
        ("what broke 4 hours ago", NOW - timedelta(hours=6), NOW - timedelta(hours=2)),
        ("this afternoon's call", day(3, 20), day(3, 21)),
        ("30 minutes ago", NOW - timedelta(minutes=45), NOW - timedelta(minutes=15)),
        ("5 minutes ago", NOW - timedelta(minutes=15), NOW + timedelta(minutes=5)),
        # The past hours or minutes: from then until now.
        ("what happened in the past hour", NOW - timedelta(hours=1), day(3, 21)),
        ("errors in the last 30 minutes", NOW - timedelta(minutes=30), day(3, 21)),
        ("the past 24 hours", NOW - timedelta(hours=24), day(3, 21)),
        ("in the last year", day(3, 20, 2023), day(3, 21)),  # the past twelve months
    ],
)
def test_a_named_time_becomes_a_span(query: str, start: datetime, end: datetime):
    assert time_window(query, NOW) == (start, end)


@pytest.mark.parametrize(
    "query",
    [
        "what is the deploy schedule",
        "I may go to the store",         # "may" the verb
        "which 2 may conflict",
        "I may 10x the budget",
        "on Saturday mornings",          # a habit, not a day
        "what happens on Fridays",
        "what is in Jan's calendar",     # a person's
        "February 30, 2024",             # not a date
        "the 2024-13-01 release",
        "since 2024-13-01",               # not all of 2024
        "last minute changes",            # an idiom, not the past minute
        "solar panels on sun exposure",   # no Sunday
        "valid until 9999-12-31",        # spans past the calendar's end
        "expires December 31, 9999",
    ],
)
def test_no_named_time_no_span(query: str):
    assert time_window(query, NOW) is None


def test_a_leap_day_without_a_year_is_the_latest_one():
    assert time_window("the party on February 29", datetime(2025, 3, 1, tzinfo=timezone.utc)) == (
        day(2, 22), day(3, 14))


def test_hours_ago_are_hours_elapsed_across_a_clock_change():
    from zoneinfo import ZoneInfo

    now = datetime(2026, 3, 8, 3, 30, tzinfo=ZoneInfo("America/New_York"))  # an hour after clocks sprang forward
    start, end = time_window("what happened 2 hours ago", now)
    assert (now.timestamp() - start.timestamp(), now.timestamp() - end.timestamp()) == (3 * 3600, 3600)


def test_a_naive_now_gives_a_naive_span():
    naive = datetime(2026, 5, 11, 15)
    for query in ("since 2 hours ago", "2 hours ago", "since yesterday"):
        start, end = time_window(query, naive)
        assert start.tzinfo is None and end.tzinfo is None and start < end


def test_days_are_the_calendar_days_of_nows_time_zone():
    from zoneinfo import ZoneInfo

    pacific = ZoneInfo("America/Los_Angeles")
    friday_evening = datetime(2024, 3, 15, 20, tzinfo=pacific)  # already Saturday in UTC
    start, end = time_window("what broke yesterday", friday_evening)
    assert (start, end) == (datetime(2024, 3, 14, tzinfo=pacific), datetime(2024, 3, 15, tzinfo=pacific))


def test_recall_reads_yesterday_where_the_caller_is(tmp_path: Path):
    from zoneinfo import ZoneInfo

    pacific = ZoneInfo("America/Los_Angeles")
    with Mnemosyne(db_path=tmp_path / "m.db", embedder="none") as mem:
        thursday = mem.remember("deploy of the billing service", created_at=datetime(2024, 3, 14, 10, tzinfo=pacific))
        mem.remember("deploy of the search service", created_at=datetime(2024, 3, 15, 12, tzinfo=pacific))
        found = mem.recall("which deploy happened yesterday?", now=datetime(2024, 3, 15, 20, tzinfo=pacific))
        assert found[0].id == thursday


def test_a_float_now_is_read_with_the_machines_offset_at_that_instant(tmp_path: Path):
    # Run where the machine is in Berlin, in winter, replaying a summer evening.
    script = """if True:
        from datetime import datetime, timezone
        from mnemosyne import Mnemosyne
        with Mnemosyne(db_path=__import__("sys").argv[1], embedder="none") as mem:
            meant = mem.remember("deploy notes alpha", created_at="2024-07-14T12:00:00+02:00")
            mem.remember("deploy notes beta", created_at="2024-07-13T12:00:00+02:00")
            now = datetime(2024, 7, 14, 22, 30, tzinfo=timezone.utc).timestamp()  # 00:30 on the 15th, CEST
            print(mem.recall("deploy notes from yesterday", now=now)[0].id == meant)
    """
    import os
    import subprocess
    import sys

    env = {**os.environ, "TZ": "Europe/Berlin"}
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "m.db")], capture_output=True, text=True,
                          env=env, timeout=60)
    assert done.stdout.strip() == "True", done.stderr


def test_a_float_now_counts_days_back_across_a_daylight_saving_change(tmp_path: Path):
    # New York, the Monday after clocks went forward: "yesterday" is Sunday, midnight
    # to midnight of the wall clock, not an hour off.
    script = """if True:
        from datetime import datetime
        from zoneinfo import ZoneInfo
        from mnemosyne import Mnemosyne
        ny = ZoneInfo("America/New_York")
        with Mnemosyne(db_path=__import__("sys").argv[1], embedder="none") as mem:
            mem.remember("server reboot saturday night", created_at=datetime(2026, 3, 7, 23, 30, tzinfo=ny))
            mem.remember("server reboot sunday", created_at=datetime(2026, 3, 8, 12, tzinfo=ny))
            now = datetime(2026, 3, 9, 12, tzinfo=ny).timestamp()
            found = mem.recall("server reboot yesterday", now=now, explain=True)
            print(sorted((m.content, m.explanation["time_match"]) for m in found))
    """
    import os
    import subprocess
    import sys

    env = {**os.environ, "TZ": "America/New_York"}
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "m.db")], capture_output=True, text=True,
                          env=env, timeout=60)
    assert done.stdout.strip() == str(
        [("server reboot saturday night", 1.0), ("server reboot sunday", 1.5)]), done.stderr


def test_the_calendars_ends_name_no_time_and_break_nothing(tmp_path: Path):
    with Mnemosyne(db_path=tmp_path / "m.db", embedder="none") as mem:
        mem.remember("an early note", created_at="0001-03-01T00:00:00Z")
        assert len(mem.recall("the early note of last year", now=datetime(1, 6, 1, tzinfo=timezone.utc))) == 1
        assert len(mem.recall("the early note of yesterday", now=datetime.max)) == 1


def test_no_span_before_the_calendar_begins():
    assert time_window("3 years ago", datetime(1, 1, 3, tzinfo=timezone.utc)) is None


def test_a_weekday_in_the_query_favours_memories_from_that_day(tmp_path: Path):
    with Mnemosyne(db_path=tmp_path / "m.db", embedder="none") as mem:
        friday = mem.remember("the standup moved the launch", created_at=day(3, 15) + timedelta(hours=9))
        monday = mem.remember("the standup moved the launch", created_at=day(3, 18) + timedelta(hours=9),
                              allow_duplicate=True)
        assert mem.recall("what did the standup move last Friday", now=NOW)[0].id == friday
        assert mem.recall("what did the standup move on Monday", now=NOW)[0].id == monday


@pytest.mark.parametrize("embedder", ["none", HashEmbedder()], ids=["words only", "with vectors"])
def test_a_query_that_names_only_a_time_finds_what_happened_then(tmp_path: Path, embedder):
    now = datetime(2026, 6, 10, 15, tzinfo=timezone.utc)
    with Mnemosyne(db_path=tmp_path / "m.db", embedder=embedder) as mem:
        mem.remember("The staging server ran out of disk space.", created_at=now - timedelta(days=1, hours=6))
        mem.remember("Lunch was pizza again.", created_at=now - timedelta(days=1, hours=2))
        mem.remember("We chose PostgreSQL for billing.", created_at=now - timedelta(days=5))
        found = {m.content for m in mem.recall("what happened yesterday?", now=now)}
        assert found == {"The staging server ran out of disk space.", "Lunch was pizza again."}
        # The span meets the caller's own filters: here they leave nothing of it.
        assert mem.recall("what happened yesterday?", now=now, since=now - timedelta(hours=1)) == []


def test_a_times_summary_does_not_crowd_out_its_other_memories(tmp_path: Path):
    now = datetime(2026, 6, 10, 12, tzinfo=timezone.utc)
    yesterday = now - timedelta(days=1)
    with Mnemosyne(db_path=tmp_path / "m.db", embedder="none") as mem:
        notes = [mem.remember(f"Called supplier {i} about invoice {100 + i}.", created_at=yesterday.replace(hour=i))
                 for i in range(3)]
        mem.remember_many({"content": f"Chat line {i}: the migration plan, step {i}.",
                           "created_at": yesterday.replace(hour=15) + timedelta(minutes=i)} for i in range(60))
        assert mem.sleep(policy=SleepPolicy(summarise_after=0, consolidate="all")).summarised == 60
        found = mem.recall("what happened yesterday?", now=now)
        assert set(notes) <= {m.id for m in found}
        assert [m.kind for m in found].count("summary") == 1


def test_without_vectors_a_times_memories_come_newest_first(tmp_path: Path):
    now = datetime(2026, 6, 10, 12, tzinfo=timezone.utc)
    with Mnemosyne(db_path=tmp_path / "m.db", embedder="none") as mem:
        ids = mem.remember_many({"content": f"event number {i}", "created_at": now - timedelta(hours=30 - i / 10)}
                                for i in range(120))
        assert [m.id for m in mem.recall("what happened yesterday?", now=now, top_k=5)] == ids[:-6:-1]


def test_a_times_memory_without_a_vector_is_found_beside_those_with_one(tmp_path: Path):
    now = datetime(2026, 6, 10, 12, tzinfo=timezone.utc)
    db = tmp_path / "m.db"
    with Mnemosyne(db_path=db, embedder=HashEmbedder()) as mem:
        mem.remember("Paid the electricity bill.", created_at=now - timedelta(hours=20))
    with Mnemosyne(db_path=db, embedder="none") as without_model:  # a process without the model
        without_model.remember("Signed the apartment lease.", created_at=now - timedelta(hours=19))
    with Mnemosyne(db_path=db, embedder=HashEmbedder(), auto_backfill=False) as mem:
        found = {m.content for m in mem.recall("what happened yesterday?", now=now)}
    assert found == {"Paid the electricity bill.", "Signed the apartment lease."}


@pytest.mark.parametrize("query", [
    "what did we work on yesterday", "what happened earlier yesterday", "anything going on yesterday",
])
def test_asking_what_was_done_at_a_time_lists_that_times_memories(tmp_path: Path, query: str):
    now = datetime(2026, 6, 10, 12, tzinfo=timezone.utc)
    with Mnemosyne(db_path=tmp_path / "m.db", embedder="none") as mem:
        refactor = mem.remember("Refactored the billing service.", created_at=now - timedelta(hours=20))
        assert [m.id for m in mem.recall(query, now=now)] == [refactor]


@pytest.mark.parametrize("embedder", ["none", HashEmbedder()], ids=["words only", "with vectors"])
def test_a_question_about_nothing_but_a_time_returns_only_that_times_memories(tmp_path: Path, embedder):
    now = datetime(2026, 4, 15, 16, tzinfo=timezone.utc)  # a Wednesday
    with Mnemosyne(db_path=tmp_path / "m.db", embedder=embedder) as mem:
        # Monday's memory names Thursday; an older one holds "2"; neither is of the time asked about.
        mem.remember("Meeting with Bob about the roadmap moved to Thursday.", created_at=now - timedelta(days=9))
        mem.remember("Deployed version 2.3.1 to staging.", created_at=now - timedelta(days=9, hours=1))
        thursday = mem.remember("Paired with Carol on the billing export.", created_at=now - timedelta(days=6))
        today = mem.remember("Rotated the staging certificates.", created_at=now - timedelta(hours=3))
        assert [m.id for m in mem.recall("what happened last Thursday", now=now)] == [thursday]
        assert [m.id for m in mem.recall("what happened in the past 2 days", now=now)] == [today]
        # A question about something at that time still finds it elsewhere.
        assert "Thursday" in mem.recall("the roadmap meeting moved to Thursday", now=now)[0].content


def test_a_time_lists_its_memories_only_for_a_question_about_nothing_else(tmp_path: Path):
    now = datetime(2026, 6, 10, 12, tzinfo=timezone.utc)
    with Mnemosyne(db_path=tmp_path / "m.db", embedder="none") as mem:
        lunch = mem.remember("Lunch was pizza again.", created_at=now - timedelta(hours=22))
        assert [m.id for m in mem.recall("what happened yesterday?", now=now)] == [lunch]
        assert [m.id for m in mem.recall("anything new yesterday?", now=now)] == [lunch]
        assert mem.recall("what did the dentist say yesterday?", now=now) == []


def test_a_times_memories_are_found_under_a_busy_span_of_other_sessions(tmp_path: Path):
    now = datetime(2026, 6, 10, 12, tzinfo=timezone.utc)
    db = tmp_path / "m.db"
    with Mnemosyne(session_id="me", db_path=db, embedder="none") as me:
        mine = me.remember("Reviewed the quarterly budget.", source="planner", created_at=now - timedelta(hours=30))
    with Mnemosyne(session_id="peer", db_path=db, embedder="none") as peer:
        shared = peer.remember("The office moves to the fifth floor.", scope="global", source="planner",
                               created_at=now - timedelta(hours=29))
        # Newer than both: the peer's private notes, and shared ones the filter rejects.
        for scope in ("session", "global"):
            peer.remember_many({"content": f"peer note {i}", "source": "chatter", "scope": scope,
                                "created_at": now - timedelta(hours=28) + timedelta(seconds=i)} for i in range(3000))
    with Mnemosyne(session_id="me", db_path=db, embedder="none") as me:
        for filters in ({"source": "planner"}, {"source": "planner", "scope": "global"}):
            expected = [shared] if filters.get("scope") else [shared, mine]
            assert [m.id for m in me.recall("what happened yesterday?", now=now, **filters)] == expected


@pytest.mark.parametrize("query", [
    "what happened on April 9", "what happened on 2026-04-09", "what we did on 9 April", "what happened on April 9th",
    "what did we discuss on the 9th of April",
])
def test_a_listing_of_a_date_holds_that_day_alone(tmp_path: Path, query: str):
    now = datetime(2026, 4, 15, 16, tzinfo=timezone.utc)
    with Mnemosyne(db_path=tmp_path / "m.db", embedder=HashEmbedder()) as mem:
        days = {day: mem.remember(f"Worked on task number {day}.", created_at=now.replace(day=day, hour=11))
                for day in range(1, 15)}
        found = mem.recall(query, now=now, top_k=5, explain=True)
        # Not the days around it, which a topical question searches for retellings.
        assert [m.id for m in found] == [days[9]]
        assert found[0].explanation["listed"] == 1.0 and found[0].explanation["dense"] == 0.0
        # Every field is explained, those a listing does not search as 0.
        assert found[0].explanation["content"] == found[0].explanation["context"] == 0.0


def test_a_listing_of_a_month_holds_that_month_alone(tmp_path: Path):
    now = datetime(2026, 5, 15, 16, tzinfo=timezone.utc)
    with Mnemosyne(db_path=tmp_path / "m.db", embedder="none") as mem:
        april = mem.remember("Closed the April books.", created_at=datetime(2026, 4, 20, tzinfo=timezone.utc))
        mem.remember("Opened the May books.", created_at=datetime(2026, 5, 4, tzinfo=timezone.utc))
        for query in ("what happened in April", "what happened last month"):
            assert [m.id for m in mem.recall(query, now=now, top_k=50)] == [april]


@pytest.mark.parametrize("query", [
    "what did we discuss yesterday", "what did we talk about yesterday", "catch me up on yesterday",
    "list everything from yesterday", "summarise yesterday", "what was done yesterday",
])
def test_asking_for_a_times_account_in_other_words_lists_it(tmp_path: Path, query: str):
    now = datetime(2026, 6, 10, 12, tzinfo=timezone.utc)
    with Mnemosyne(db_path=tmp_path / "m.db", embedder="none") as mem:
        refactor = mem.remember("Refactored the billing service.", created_at=now - timedelta(hours=20))
        assert [m.id for m in mem.recall(query, now=now)] == [refactor]


@pytest.mark.parametrize(("query", "expected"), [
    ("who was late yesterday", "Bob was late to standup again."),
    ("the minutes from yesterday", "Meeting minutes: we ship v2 on Friday."),
])
def test_a_word_of_a_time_outside_one_is_what_a_question_asks_about(tmp_path: Path, query: str, expected: str):
    now = datetime(2026, 6, 10, 12, tzinfo=timezone.utc)
    with Mnemosyne(db_path=tmp_path / "m.db", embedder="none") as mem:
        for hours, text in [(22, "Bob was late to standup again."), (18, "Meeting minutes: we ship v2 on Friday."),
                            (14, "Refactored the billing service.")]:
            mem.remember(text, created_at=now - timedelta(hours=hours))
        assert mem.recall(query, now=now)[0].content == expected


@pytest.mark.parametrize("query", ["what happened to 4521 yesterday", "4521 yesterday"])
def test_a_number_no_time_holds_is_what_a_question_asks_about(tmp_path: Path, query: str):
    now = datetime(2026, 6, 10, 12, tzinfo=timezone.utc)
    with Mnemosyne(db_path=tmp_path / "m.db", embedder="none") as mem:
        ticket = mem.remember("Ticket 4521 escalated to the vendor.", created_at=now - timedelta(hours=20))
        mem.remember("Routine backup check passed.", created_at=now - timedelta(hours=14))
        assert [m.id for m in mem.recall(query, now=now)] == [ticket]


def test_a_listing_is_in_time_order_whatever_sounds_like_an_event(tmp_path: Path):
    now = datetime(2026, 6, 10, 12, tzinfo=timezone.utc)
    with Mnemosyne(db_path=tmp_path / "m.db", embedder=HashEmbedder()) as mem:
        incident = mem.remember("What happened: the outage report.", created_at=now - timedelta(hours=6))
        lunch = mem.remember("Lunch with the design team.", created_at=now - timedelta(hours=2))
        assert [m.id for m in mem.recall("what happened today", now=now)] == [lunch, incident]


def test_a_listing_asked_again_lists_what_came_since(tmp_path: Path):
    noon = datetime(2026, 6, 10, 12, tzinfo=timezone.utc)
    with Mnemosyne(db_path=tmp_path / "m.db", embedder="none") as mem:
        mem.remember_many({"content": f"morning note {hour}", "created_at": noon.replace(hour=hour)}
                          for hour in (8, 9, 10))
        assert len(mem.recall("what happened today", now=noon, top_k=3)) == 3
    with Mnemosyne(db_path=tmp_path / "m.db", embedder="none") as mem:  # the recall counts are written
        later = mem.remember_many({"content": f"afternoon note {hour}", "created_at": noon.replace(hour=hour)}
                                  for hour in (13, 14, 15))
        # What the first listing returned (and so was recalled once) does not stay on top.
        assert [m.id for m in mem.recall("what happened today", now=noon.replace(hour=16), top_k=3)] == later[::-1]


def test_a_topical_question_naming_a_time_finds_its_memory_without_a_vector(tmp_path: Path):
    now = datetime(2026, 6, 10, 12, tzinfo=timezone.utc)
    db = tmp_path / "m.db"
    with Mnemosyne(db_path=db, embedder="none") as without_model:  # stored while the model was down
        dentist = without_model.remember("The dentist said the filling can wait.", created_at=now - timedelta(hours=20))
    with Mnemosyne(db_path=db, embedder=HashEmbedder(), auto_backfill=False) as mem:
        mem.remember_many({"content": f"unrelated note {i}", "created_at": now - timedelta(hours=19, seconds=-i)}
                          for i in range(30))
        assert mem.recall("what did the dentist say yesterday", now=now)[0].id == dentist


def test_the_latest_of_a_span_are_read_exactly_or_among_the_latest_scanned(tmp_path: Path):
    from mnemosyne.storage.base import Filters

    now = datetime(2026, 6, 10, 12, tzinfo=timezone.utc)
    with Mnemosyne(session_id="me", db_path=tmp_path / "m.db", embedder="none") as mem:
        mem.remember("kept by the planner", source="planner", created_at=now - timedelta(hours=5))
        mem.remember_many({"content": f"chatter {i}", "source": "chatter", "valid_until": now - timedelta(hours=1),
                           "created_at": now - timedelta(hours=4, seconds=-i)} for i in range(10))
        span = Filters("me", since=(now - timedelta(days=1)).timestamp(), until=now.timestamp(),
                       valid_at=now.timestamp())
        assert len(mem._store.latest(span, 5)) == 1
        assert mem._store.latest(span, 5, scanned=10) == []  # the ten newer ones are all the walk reads
        # A source's walk reads only that source's memories.
        assert len(mem._store.latest(dataclasses.replace(span, sources=("planner",)), 5, scanned=10)) == 1
