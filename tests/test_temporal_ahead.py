"""Questions about a date ahead ("what's happening in December", asked in November):
answered by the memories that mention it, made before it."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from mnemosyne import Mnemosyne
from mnemosyne.core.dates_ahead import dates_ahead
from mnemosyne.core.temporal import named_time, time_window
from mnemosyne.testing import HashEmbedder

NOW = datetime(2026, 11, 27, 17, tzinfo=timezone.utc)  # a Friday
EMBEDDERS = pytest.mark.parametrize("embedder", ["none", HashEmbedder()], ids=["words only", "with vectors"])


@pytest.mark.parametrize(("query", "forms"), [
    ("anything on December 3", {"december 3", "dec 3rd", "3 december", "3rd of dec", "2026 12 03"}),
    ("what do I have on 10th Dec", {"december 10", "10th of december", "2026 12 10"}),
    ("what's happening in December", {"december", "dec"}),
    ("what is due in mid-January", {"january", "jan"}),  # within two months
    ("what are we doing at Christmas", {"christmas", "december 25", "25th december"}),
    ("the launch on 2027-02-20", {"february 20", "feb 20th", "2027 02 20"}),  # a full date: ahead is ahead
    ("the review on September 1, 2027", {"september 1st", "sept 1", "1st of sep", "2027 09 01"}),
])
def test_a_date_ahead_is_searched_as_written_and_names_no_span(query: str, forms: set[str]):
    found = dates_ahead(query, NOW)
    assert forms <= set(found.forms)
    assert time_window(query, NOW) is None


@pytest.mark.parametrize(("query", "start"), [
    ("what happened on November 12", datetime(2026, 11, 5, tzinfo=timezone.utc)),  # past this year
    ("what happened in March", datetime(2026, 3, 1, tzinfo=timezone.utc)),  # three months ahead: the one past
    ("the offsite in February", datetime(2026, 2, 1, tzinfo=timezone.utc)),  # 66 days ahead
    ("what happened at Christmas", datetime(2025, 12, 18, tzinfo=timezone.utc)),  # in the past tense
    ("what did we do in January", datetime(2026, 1, 1, tzinfo=timezone.utc)),
    ("what happened in November", datetime(2026, 11, 1, tzinfo=timezone.utc)),  # begun: this one
    ("on November 27", datetime(2026, 11, 20, tzinfo=timezone.utc)),  # today
    ("what's left from last December", datetime(2025, 12, 1, tzinfo=timezone.utc)),  # "last": the one past
    ("the December 3, 2025 outage", datetime(2025, 11, 26, tzinfo=timezone.utc)),  # not also "December 3" ahead
])
def test_a_date_past_or_far_ahead_is_a_time_memories_were_made_in(query: str, start: datetime | None):
    assert dates_ahead(query, NOW).forms == ()
    found = named_time(query, NOW)
    assert (None if found is None else found.span[0]) == start


def test_a_date_ahead_leaves_another_time_to_read():
    found = named_time("the notes from last week about December 3", NOW)
    assert found is not None and found == named_time("last week", NOW)


def test_a_day_ahead_in_the_first_days_of_a_year_is_next_years():
    new_years_eve = datetime(2026, 12, 31, 20, tzinfo=timezone.utc)
    assert "2027 01 09" in dates_ahead("what do I have on January 9", new_years_eve).forms


@EMBEDDERS
def test_a_question_about_an_upcoming_date_finds_the_memories_that_mention_it(tmp_path: Path, embedder):
    with Mnemosyne(db_path=tmp_path / "m.db", embedder=embedder) as mem:
        dentist, review, play = mem.remember_many([
            {"content": "Dentist appointment with Dr. Okafor on December 3 at 10:30.",
             "created_at": NOW - timedelta(days=7)},
            {"content": "Email from Richard: the Q4 review moved to 10th Dec.", "created_at": NOW - timedelta(days=11)},
            {"content": "Leo's school nativity play is on 16 December at 14:00.",
             "created_at": NOW - timedelta(days=20)},
        ])
        mem.remember("The car's MOT is due on January 9.", created_at=NOW - timedelta(days=100))
        mem.remember("Paid 3 invoices at the dentist.", created_at=NOW - timedelta(days=2))
        mem.remember_many({"content": f"Shopping list {i}: milk, bread and eggs.",
                           "created_at": NOW - timedelta(days=i, hours=5)} for i in range(40))
        assert [m.id for m in mem.recall("anything on December 3", now=NOW)] == [dentist]
        assert [m.id for m in mem.recall("what do I have on December 10", now=NOW)] == [review]
        assert {m.id for m in mem.recall("what's happening in December", now=NOW)} == {dentist, review, play}
        # A topical question about it searches its topic beside its date.
        assert mem.recall("when is the dentist in December", now=NOW)[0].id == dentist


@EMBEDDERS
def test_past_dates_still_list_the_memories_made_then(tmp_path: Path, embedder):
    with Mnemosyne(db_path=tmp_path / "m.db", embedder=embedder) as mem:
        november = mem.remember("Signed the new lease.", created_at=datetime(2026, 11, 12, 15, tzinfo=timezone.utc))
        march = mem.remember("Paid the council tax bill.", created_at=datetime(2026, 3, 10, 9, tzinfo=timezone.utc))
        mem.remember("The gas safety check is on March 4.", created_at=NOW - timedelta(days=1))
        assert [m.id for m in mem.recall("what happened on November 12", now=NOW)] == [november]
        assert [m.id for m in mem.recall("what happened in March", now=NOW)] == [march]


@pytest.mark.parametrize(("query", "dates", "not_dates"), [
    ("what do I have tomorrow", {"2026 11 28"}, {"2026 11 27", "2026 11 29"}),
    ("what's planned for the day after tomorrow", {"2026 11 29"}, {"2026 11 28"}),
    ("anything scheduled next week", {"2026 11 30", "2026 12 03", "2026 12 06"}, {"2026 11 29", "2026 12 07"}),
    ("what's on this weekend", {"2026 11 28", "2026 11 29"}, {"2026 12 05"}),
    ("anything this Sunday", {"2026 11 29"}, {"2026 11 22", "2026 12 06"}),
    # Read both ways people mean them: the coming one and the one a week later.
    ("plans for next Tuesday", {"2026 12 01", "2026 12 08"}, {"2026 11 24"}),
    ("next weekend", {"2026 11 28", "2026 11 29", "2026 12 05", "2026 12 06"}, set()),
])
def test_a_day_ahead_named_from_today_is_searched_as_its_dates(query: str, dates: set[str], not_dates: set[str]):
    forms = set(dates_ahead(query, NOW).forms)
    assert dates <= forms and not (not_dates & forms)
    assert time_window(query, NOW) is None


def test_memories_made_a_year_before_a_date_without_its_year_are_about_an_earlier_one():
    assert dates_ahead("what do I have tomorrow", NOW).made_after == datetime(2025, 11, 28, tzinfo=timezone.utc)
    assert dates_ahead("anything in December", NOW).made_after == datetime(2025, 12, 1, tzinfo=timezone.utc)
    assert dates_ahead("the launch on 2027-02-20", NOW).made_after is None  # its year said: any time


def test_next_month_is_searched_as_its_names():
    assert set(dates_ahead("what is due next month", NOW).forms) == {"december", "dec"}


def test_this_friday_on_a_friday_is_today_not_ahead():
    assert dates_ahead("what happened this Friday", NOW).forms == ()
    assert time_window("what happened this Friday", NOW) == time_window("what happened today", NOW)


@EMBEDDERS
def test_a_question_about_tomorrow_or_next_week_finds_the_memories_that_mention_those_dates(tmp_path: Path, embedder):
    with Mnemosyne(db_path=tmp_path / "m.db", embedder=embedder) as mem:
        boiler, dentist = mem.remember_many([
            {"content": "The boiler service is on November 28 between 8 and 12.",
             "created_at": NOW - timedelta(days=9)},
            {"content": "Dentist appointment with Dr. Okafor on December 3 at 10:30.",
             "created_at": NOW - timedelta(days=7)},
        ])
        mem.remember("The boiler was serviced on November 28.", created_at=NOW - timedelta(days=370))
        mem.remember_many({"content": f"Shopping list {i}: milk, bread and eggs.",
                           "created_at": NOW - timedelta(days=i, hours=5)} for i in range(40))
        assert [m.id for m in mem.recall("what do I have tomorrow", now=NOW)] == [boiler]
        assert [m.id for m in mem.recall("anything scheduled next week?", now=NOW)] == [dentist]
        # A topical question still searches the words it says them in.
        camping = mem.remember("We go camping at the lake next month.", created_at=NOW - timedelta(days=3))
        assert mem.recall("when do we go camping next month", now=NOW)[0].id == camping
