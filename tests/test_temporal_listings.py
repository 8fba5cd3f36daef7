"""What a listing of a time holds: the time a query names, not the generous span a
topical question searches, and who said it when a query names them."""

from __future__ import annotations

import random
import sqlite3
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from mnemosyne import Mnemosyne
from mnemosyne.core import lexical
from mnemosyne.core.temporal import asks_only_when, named_time, without_times
from mnemosyne.core.time_phrases import relative_times_apart
from mnemosyne.storage.base import Filters
from mnemosyne.storage.sqlite import SQLiteStore, listing
from mnemosyne.testing import HashEmbedder

NOW = datetime(2026, 3, 13, 17, tzinfo=timezone.utc)  # a Friday
EMBEDDERS = pytest.mark.parametrize("embedder", ["none", HashEmbedder()], ids=["words only", "with vectors"])
AUTUMN = datetime(2026, 11, 27, 17, tzinfo=timezone.utc)


def at(day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(2026, 3, day, hour, minute, tzinfo=timezone.utc)


@pytest.mark.parametrize(("query", "span", "named"), [
    # That calendar day; the span also holds the day before, as counted loosely.
    ("what happened 2 days ago", (at(10), at(12)), (at(11), at(12))),
    # The week around that day, three days either side, inside a looser span.
    ("what happened a week ago", (at(6) - timedelta(days=6.5), at(6) + timedelta(days=6.5)), (at(3), at(10))),
    # From that long before now until today ends.
    ("what happened in the last 2 days", (at(10), at(14)), (at(11, 17), at(14))),
    ("what happened in the past 3 days", (at(9), at(14)), (at(10, 17), at(14))),
    # A part of a day: the day for a topical question, the part for a listing.
    ("what happened on Tuesday afternoon", (at(10), at(11)), (at(10, 12), at(10, 18))),
    ("what happened Tuesday morning", (at(10), at(11)), (at(10, 5), at(10, 12))),
    ("what happened Wednesday evening", (at(11), at(12)), (at(11, 18), at(12))),
    ("what happened last Thursday night", (at(12), at(13, 6)), (at(12, 18), at(13, 6))),
    ("what happened yesterday morning", (at(12), at(13)), (at(12, 5), at(12, 12))),
    ("what happened this afternoon", (at(13), at(14)), (at(13, 12), at(13, 18))),
    # Last night: yesterday's; its span also holds the day before and all of today.
    ("what happened last night", (at(12), at(14)), (at(12, 18), at(13, 6))),
    ("what happened tonight", (at(13), at(14, 6)), (at(13, 18), at(14, 6))),
    # A bare weekday with a part of the day: the latest such part begun, today's included.
    ("what happened Friday afternoon", (at(13), at(14)), (at(13, 12), at(13, 18))),
    ("what happened Friday evening", (at(6), at(7)), (at(6, 18), at(7))),  # not yet begun
    ("what happened last Friday afternoon", (at(6), at(7)), (at(6, 12), at(6, 18))),
    ("what happened on Friday afternoon", (at(6), at(7)), (at(6, 12), at(6, 18))),
])
def test_a_listing_keeps_to_the_time_a_query_names(query: str, span: tuple, named: tuple):
    found = named_time(query, NOW)
    assert found is not None and (found.span, found.named) == (span, named)
    assert asks_only_when(query)


@pytest.mark.parametrize("query", ["the Tuesday sync notes", "on Saturday mornings", "the morning standup"])
def test_a_bare_weekday_or_part_of_a_day_alone_is_no_time(query: str):
    assert named_time(query, NOW) is None


def test_a_times_words_are_no_topic_but_the_rest_of_the_query_is():
    assert without_times("where did I park 3 days ago").split() == ["where", "did", "i", "park"]
    assert without_times("errors since March in the auth service").split() == ["errors", "in", "the", "auth",
                                                                                 "service"]
    assert without_times("the user's messages yesterday").split() == ["the", "user's", "messages"]
    assert without_times("the party on Valentine's day").split() == ["the", "party", "on"]
    # A time counted back from now is no topic; a named time's words may be ("our August trip").
    assert relative_times_apart("where did I park 3 days ago") == ("where did i park  ", ())
    assert relative_times_apart("the trip in August, the past 2 days").rest.split() == ["the", "trip", "in",
                                                                                         "august,", "the"]
    # A count of weeks, months or years is what a memory says how long in ("for 4 years").
    assert relative_times_apart("where did I move from 4 years ago").rest.split()[-3:] == ["4", "years", "ago"]
    # Other times relative to now are searched as the phrase they are, not as loose words.
    assert relative_times_apart("emails from last week") == ("emails from  ", ("last week",))
    assert relative_times_apart("the monthly report this month") == ("the monthly report  ", ("this month",))
    assert relative_times_apart("what did we decide on Friday") == ("what did we decide  ", ("friday",))


@EMBEDDERS
@pytest.mark.parametrize(("query", "days"), [
    ("what happened 2 days ago", [11]),
    ("what happened a week ago", [3, 4, 5, 6, 7, 8, 9]),
    ("what happened in the last 2 days", [12, 13]),
    ("what happened in the past 3 days", [11, 12, 13]),
])
def test_a_listing_of_a_relative_time_holds_that_time_alone(tmp_path: Path, embedder, query: str, days: list[int]):
    with Mnemosyne(db_path=tmp_path / "m.db", embedder=embedder) as mem:
        mem.remember_many({"content": f"Daily log entry of March {day}.", "created_at": at(day, 10)}
                          for day in range(1, 14))
        found = mem.recall(query, now=NOW, top_k=50)
        assert sorted(m.created_at.day for m in found) == days


@EMBEDDERS
@pytest.mark.parametrize(("query", "expected"), [
    ("what happened on Tuesday morning", ["Migration 0042 failed: the index already exists."]),
    ("what happened Tuesday morning", ["Migration 0042 failed: the index already exists."]),
    ("what happened on Tuesday afternoon", ["Fixed the migration with IF NOT EXISTS."]),
    ("what happened Wednesday evening", ["Switched every service to Postgres 16."]),
    ("what happened on Tuesday", ["Fixed the migration with IF NOT EXISTS.",
                                  "Migration 0042 failed: the index already exists."]),
])
def test_a_weekday_with_a_part_of_the_day_lists_that_part(tmp_path: Path, embedder, query: str, expected: list[str]):
    with Mnemosyne(db_path=tmp_path / "m.db", embedder=embedder) as mem:
        mem.remember_many([
            {"content": "Migration 0042 failed: the index already exists.", "created_at": at(10, 9, 30)},
            {"content": "Fixed the migration with IF NOT EXISTS.", "created_at": at(10, 15, 20)},
            {"content": "Switched every service to Postgres 16.", "created_at": at(11, 19, 40)},
            {"content": "Reviewed the morning and afternoon on-call rota.", "created_at": at(2, 12)},
        ])
        assert [m.content for m in mem.recall(query, now=NOW)] == expected


@EMBEDDERS
@pytest.mark.parametrize(("query", "expected"), [
    ("what happened Friday afternoon", ["Demoed the new search page."]),
    ("what did I say Friday morning", ["Booked the meeting room."]),
    ("what happened last Friday afternoon", ["Demoed the old search page."]),
])
def test_a_bare_weekday_and_part_said_that_day_is_todays_once_begun(tmp_path: Path, embedder, query: str,
                                                                    expected: list[str]):
    with Mnemosyne(db_path=tmp_path / "m.db", embedder=embedder) as mem:
        mem.remember_many({"content": content, "source": "user", "created_at": created_at} for content, created_at in [
            ("Demoed the old search page.", at(6, 14)), ("Booked the meeting room.", at(13, 9)),
            ("Demoed the new search page.", at(13, 14)),
        ])
        assert [m.content for m in mem.recall(query, now=NOW)] == expected


@EMBEDDERS
@pytest.mark.parametrize(("query", "now", "expected"), [
    ("what did I say last night", at(13, 16), ["Can't sleep, reading.", "Watching a movie."]),
    ("what happened last night", at(13, 16), ["Can't sleep, reading.", "Watching a movie."]),
    ("what happened tonight", at(13, 23), ["Ordered a pizza."]),
    # Before the night ends at 6, "tonight" is the one under way.
    ("what happened tonight", at(13, 2), ["Can't sleep, reading.", "Watching a movie."]),
])
def test_last_night_and_tonight_list_the_night(tmp_path: Path, embedder, query: str, now: datetime,
                                               expected: list[str]):
    with Mnemosyne(db_path=tmp_path / "m.db", embedder=embedder) as mem:
        mem.remember_many({"content": content, "source": "user", "created_at": created_at} for content, created_at in [
            ("Coffee before work.", at(12, 7)), ("Standup ran long.", at(12, 14)), ("Watching a movie.", at(12, 22)),
            ("Can't sleep, reading.", at(13, 1)), ("Went to the gym.", at(13, 10)), ("Ordered a pizza.", at(13, 19)),
        ])
        assert [m.content for m in mem.recall(query, now=now)] == expected


@EMBEDDERS
@pytest.mark.parametrize(("query", "expected"), [
    ("what did I say on Monday", ["The plumber fixed the kitchen sink."]),
    ("what did you say on Monday", ["Set a timer for 10 minutes."]),
    ("what did I tell you yesterday", ["My sister Eva is visiting."]),
    ("what did the user say on Monday", ["The plumber fixed the kitchen sink."]),
])
def test_a_pronoun_names_its_chat_role_at_a_time(tmp_path: Path, embedder, query: str, expected: list[str]):
    with Mnemosyne(db_path=tmp_path / "m.db", embedder=embedder) as mem:
        mem.remember_many([
            {"content": "The plumber fixed the kitchen sink.", "source": "user", "created_at": at(9, 16)},
            {"content": "Set a timer for 10 minutes.", "source": "assistant", "created_at": at(9, 17)},
            {"content": "My sister Eva is visiting.", "source": "user", "created_at": at(12, 20)},
            {"content": "Sorry, I cannot reach the calendar.", "source": "assistant", "created_at": at(12, 21)},
            *({"content": f"Played the playlist Focus {i}.", "source": "assistant", "created_at": at(1 + i, 10)}
              for i in range(5)),
        ])
        found = mem.recall(query, now=NOW, explain=True)
        assert [m.content for m in found] == expected
        assert all(m.explanation["named_source"] == 1.0 for m in found)


@EMBEDDERS
@pytest.mark.parametrize("query", [
    "what was I told yesterday", "what was said to me yesterday", "what did they tell me yesterday",
    "any messages for me yesterday", "what did you and I say yesterday", "tell me what happened yesterday",
])
def test_a_pronoun_spoken_to_or_with_another_lists_everyone_at_that_time(tmp_path: Path, embedder, query: str):
    with Mnemosyne(db_path=tmp_path / "m.db", embedder=embedder) as mem:
        mem.remember_many([
            {"content": "Can you check the deploy logs?", "source": "user", "created_at": at(12, 9)},
            {"content": "The deploy logs show a timeout in payments.", "source": "assistant", "created_at": at(12, 10)},
            {"content": "Please open a ticket.", "source": "user", "created_at": at(12, 11)},
            {"content": "Opened ticket PAY-77 for the timeout.", "source": "assistant", "created_at": at(12, 12)},
            {"content": "Good morning!", "source": "user", "created_at": at(13, 8)},
        ])
        found = mem.recall(query, now=NOW, explain=True)
        # Newest first: the pronoun favours neither side.
        assert [m.created_at.hour for m in found] == [12, 11, 10, 9]
        assert all(m.explanation["named_source"] == 0.0 for m in found)


@pytest.mark.parametrize(("query", "role"), [
    ("what did I say on Monday", "user"),
    ("what I told you yesterday", "user"),
    ("remind me what I said", "user"),
    ("what did you tell me", "assistant"),
    ("what have you just said", "assistant"),
    ("what I've said yesterday", "user"),
    ("what I have told you", "user"),
    ("what you'd said", "assistant"),
    ("what was I told", None),
    ("were you asked anything", None),
    ("what did they tell me", None),
    ("any messages for me", None),
    ("my messages", None),  # maybe those received
    ("what did you and I say", None),
    ("what did Sam and I say", None),
    ("what did I say and what did you reply", None),
])
def test_the_chat_role_is_the_pronoun_that_speaks(query: str, role: str | None):
    assert lexical.chat_role(query) == role


@pytest.mark.parametrize(("query", "left_out"), [
    ("how many games have I played", "assistant"),
    ("what's my usual order", "assistant"),
    ("what did you suggest", "user"),
    ("can you remind me what I ordered", None),  # both sides
    ("what did Sam order", None),  # neither
])
def test_the_chat_role_left_out_is_the_one_no_pronoun_points_at(query: str, left_out: str | None):
    assert lexical.role_left_out(query) == left_out


@EMBEDDERS
def test_a_pronoun_without_its_chat_role_lists_the_times_memories(tmp_path: Path, embedder):
    with Mnemosyne(db_path=tmp_path / "m.db", embedder=embedder) as mem:
        sink = mem.remember("The plumber fixed the kitchen sink.", source="chat", created_at=at(9, 16))
        mem.remember("Played the playlist Focus.", source="chat", created_at=at(5, 10))
        assert [m.id for m in mem.recall("what did I say on Monday", now=NOW)] == [sink]


@EMBEDDERS
def test_a_relative_times_words_are_not_searched_as_topic_words(tmp_path: Path, embedder):
    with Mnemosyne(db_path=tmp_path / "m.db", embedder=embedder) as mem:
        monday = mem.remember("Parked the car on level 2, spot B4 of the city garage.", source="user",
                              created_at=at(10, 18))
        mem.remember("Parked for 3 days at the airport; 3 days cost 45 EUR.", source="user",
                     created_at=datetime(2026, 1, 10, 12, tzinfo=timezone.utc))
        mem.remember("Parked the car on level 3, spot C17 of the airport garage.", source="user",
                     created_at=at(13, 7, 40))
        found = mem.recall("where did I park 3 days ago", now=NOW, explain=True)
        assert found[0].id == monday
        # "3" and "days" named the time: the January memory holding them scores no better for its words.
        assert len({m.explanation["content"] for m in found}) == 1


@EMBEDDERS
@pytest.mark.parametrize("query", ["the user's messages yesterday", "messages from the user yesterday"])
def test_a_possessive_source_lists_what_it_said_then(tmp_path: Path, embedder, query: str):
    with Mnemosyne(db_path=tmp_path / "m.db", embedder=embedder) as mem:
        mem.remember("User does not want emojis in commit messages.", source="user", created_at=at(10, 9))
        move = mem.remember("Please move the deploy to Monday.", source="user", created_at=at(12, 11))
        httpx = mem.remember("Use httpx, not requests.", source="user", created_at=at(12, 15))
        mem.remember("Opened PR #398.", source="assistant", created_at=at(12, 16))
        found = mem.recall(query, now=NOW, explain=True)
        assert [m.id for m in found] == [httpx, move]
        assert all(m.explanation["named_source"] == 1.0 for m in found)


@EMBEDDERS
@pytest.mark.parametrize("query", [
    "what changed in July", "what did we decide in July", "events in July", "any updates in July",
    "what went on in July", "any decisions in July", "what did we agree in July",
])
def test_asking_what_changed_or_was_decided_at_a_time_lists_it(tmp_path: Path, embedder, query: str):
    july = datetime(2026, 7, 12, 15, tzinfo=timezone.utc)
    with Mnemosyne(db_path=tmp_path / "m.db", embedder=embedder) as mem:
        moved = mem.remember("Jane moved to 4 Harbour Lane, Bristol.", importance=0.8, created_at=july)
        plan = mem.remember("Jane switched her mobile plan to Giffgaff.", created_at=july + timedelta(days=8))
        mem.remember("Jane's old address was 12 Mill Road.", created_at=datetime(2026, 3, 2, tzinfo=timezone.utc))
        assert [m.id for m in mem.recall(query, now=AUTUMN)] == [moved, plan]


@EMBEDDERS
def test_what_was_decided_about_something_at_a_time_stays_topical(tmp_path: Path, embedder):
    july = datetime(2026, 7, 12, 15, tzinfo=timezone.utc)
    with Mnemosyne(db_path=tmp_path / "m.db", embedder=embedder) as mem:
        chosen = mem.remember("We chose Postgres as the database for billing.", created_at=july)
        mem.remember("Booked the team offsite in Lisbon.", created_at=july + timedelta(days=2))
        older = mem.remember("The database for search stays Elasticsearch.", created_at=july - timedelta(days=90))
        found = mem.recall("what did we decide about the database in July", now=AUTUMN, explain=True)
        # July's database decision first, found by its words; not a listing of July.
        assert [m.id for m in found][:2] == [chosen, older]
        assert found[0].explanation["listed"] == 0.0 and found[0].explanation["content"] > 0


@EMBEDDERS
@pytest.mark.parametrize(("query", "expected"), [
    ("which bills came this month", "Electricity bill: 80 GBP, paid by direct debit."),
    ("emails from last week", "Email from Richard: the Q4 review moved to December 10."),
])
def test_a_relative_times_words_match_no_memory_that_merely_holds_them(tmp_path: Path, embedder, query: str,
                                                                        expected: str):
    with Mnemosyne(db_path=tmp_path / "m.db", embedder=embedder) as mem:
        mem.remember_many([
            {"content": "The gym membership is 45 GBP a month.",
             "created_at": datetime(2025, 5, 11, tzinfo=timezone.utc)},
            {"content": "Jane's passport renewal takes about 3 weeks.",
             "created_at": datetime(2025, 7, 30, tzinfo=timezone.utc)},
            {"content": expected, "created_at": at(9, 10)},
        ])
        assert [m.content for m in mem.recall(query, now=NOW)] == [expected]


@EMBEDDERS
def test_a_relative_time_is_searched_as_the_phrase_a_memory_tells_it_in(tmp_path: Path, embedder):
    with Mnemosyne(db_path=tmp_path / "m.db", embedder=embedder) as mem:
        # Told a week after: its own "last weekend" is what the question echoes.
        beaten = mem.remember("I finally beat the last boss of Elden Ring last weekend!", created_at=at(1, 20))
        mem.remember("Elden Ring: the last boss took me 3 weeks of weekends.", created_at=at(12, 20))
        mem.remember("The monthly report: Elden Ring sales are up.", created_at=at(2, 20))
        assert mem.recall("which boss did I beat in Elden Ring last weekend", now=NOW)[0].id == beaten
        # A word that is a topic elsewhere in the query stays one: "monthly" beside "last month".
        assert "monthly report" in mem.recall("the monthly report on Elden Ring last month", now=NOW)[0].content


@EMBEDDERS
@pytest.mark.parametrize("query", ["what happened last week", "what happened in the past 7 days"])
def test_a_listing_puts_its_spans_most_important_memory_first_however_many_come_after_it(
        tmp_path: Path, embedder, query: str):
    with Mnemosyne(db_path=tmp_path / "m.db", embedder=embedder) as mem:
        mem.remember_many({"content": f"Routine: ran the test suite, run {day}-{i}, all green.", "importance": 0.2,
                           "created_at": NOW - timedelta(days=day, hours=-i / 2)}
                          for day in range(1, 8) for i in range(20))
        # Five days back: a hundred routine memories of the span are later.
        outage = mem.remember("Production outage: the payments database ran out of disk.", importance=1.0,
                              created_at=NOW - timedelta(days=5))
        for top_k in (1, 10, 50):
            assert mem.recall(query, now=NOW, top_k=top_k)[0].id == outage


@pytest.mark.parametrize("scope", ["session", "global"])
def test_a_long_spans_most_important_memories_are_listed_first(tmp_path: Path, scope: str):
    # More memories than a span is read and sorted whole for: read down the importance index.
    with Mnemosyne(session_id="agent", db_path=tmp_path / "m.db", embedder="none") as mem:
        mem.remember_many({"content": f"Daily log line {i}.", "importance": 0.3, "scope": scope,
                           "created_at": at(1) + timedelta(minutes=10 * i)} for i in range(1_500))
        renewal = mem.remember("Renewed the office insurance for a year.", importance=0.9, scope=scope,
                               created_at=at(2, 9))
        audit = mem.remember("The external audit found no issues.", importance=0.9, scope=scope,
                             created_at=at(3, 9))
        mem.remember("Signed the lease for the new office.", importance=1.0, scope=scope,
                     created_at=datetime(2026, 2, 27, tzinfo=timezone.utc))  # another month
        found = mem.recall("what happened in March", now=NOW, top_k=3)
        assert [m.id for m in found][:2] == [audit, renewal]
        assert found[2].importance == 0.3 and found[2].created_at.day == 11  # then the newest of the rest


def test_a_source_and_a_time_list_its_most_important_memory_of_then_first(tmp_path: Path):
    with Mnemosyne(db_path=tmp_path / "m.db", embedder="none") as mem:
        mem.remember_many({"content": f"Nightly build {i} passed.", "source": "ci-bot", "importance": 0.2,
                           "created_at": at(12) - timedelta(hours=i)} for i in range(80))
        mem.remember_many({"content": f"Note {i}.", "source": "user", "importance": 1.0,
                           "created_at": at(12) - timedelta(hours=i)} for i in range(5))
        broken = mem.remember("Release build failed: the signing key expired.", source="ci-bot", importance=0.9,
                              created_at=at(8, 3))
        found = mem.recall("what did ci-bot say last week", now=NOW, top_k=5)
        assert found[0].id == broken
        assert {m.source for m in found} == {"ci-bot"}


@pytest.mark.parametrize("read_by", ["importance", "time", "status"])
def test_a_spans_most_important_memories_are_those_a_full_sort_puts_first(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, read_by: str):
    # Each way a walk may be read: down the importance index past other times, the
    # span by time, a status of few memories whole.
    monkeypatch.setattr(listing, "_held_up_to", lambda conn, index, condition, params: {
        "importance": False, "time": index.endswith("_time"), "status": index.endswith("_importance")}[read_by])
    rng = random.Random(7)
    db = tmp_path / "m.db"
    for session in ("agent", "other"):
        with Mnemosyne(session_id=session, db_path=db, embedder="none") as mem:
            mem.remember_many({"content": f"{session} memory {i}", "source": rng.choice(["ci-bot", "user", "sleep"]),
                               "scope": rng.choice(["session", "global"]), "importance": rng.choice([0.1, 0.5, 0.9]),
                               "created_at": at(1) + timedelta(minutes=rng.randrange(12 * 24 * 60))}
                              for i in range(400))
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE memories SET status = 'consolidated' WHERE seq % 7 = 0")
        conn.row_factory = sqlite3.Row
        rows = conn.execute("SELECT * FROM memories").fetchall()
    store = SQLiteStore(db)
    try:
        for filters in [
            Filters("agent", since=at(3).timestamp(), until=at(9).timestamp()),
            Filters("agent", since=at(5).timestamp(), until=at(6).timestamp(), scope="global",
                    statuses=("active", "consolidated")),
            Filters("agent", since=at(2).timestamp(), until=at(12).timestamp(), scope="session", sources=("user",),
                    statuses=("consolidated",)),
            Filters("agent", since=at(1).timestamp(), until=at(13).timestamp(), sources=("ci-bot", "sleep"),
                    statuses=()),
        ]:
            passing = [r for r in rows if (r["scope"] == "global" or r["session_id"] == "agent")
                       and filters.since <= r["created_at"] <= filters.until
                       and (filters.scope is None or r["scope"] == filters.scope)
                       and (not filters.sources or r["source"] in filters.sources)
                       and (not filters.statuses or r["status"] in filters.statuses)]
            first = sorted(passing, key=lambda r: (-r["importance"], -r["created_at"], -r["seq"]))
            assert first
            assert store.most_important(filters, 25) == [r["seq"] for r in first[:25]]
    finally:
        store.close()


@EMBEDDERS
def test_last_week_is_the_calendar_week_before_and_the_days_since(tmp_path: Path, embedder):
    with Mnemosyne(db_path=tmp_path / "m.db", embedder=embedder) as mem:
        monday = mem.remember("Email from Richard: the Q4 review moved to December 10.", created_at=at(2, 9))
        # The Friday before: past even a topical question's generous span.
        mem.remember("Email from Richard: the offsite budget is approved.",
                     created_at=datetime(2026, 2, 27, 9, tzinfo=timezone.utc))
        assert [m.id for m in mem.recall("what happened last week", now=NOW)] == [monday]
        assert mem.recall("what did Richard say last week", now=NOW)[0].id == monday
