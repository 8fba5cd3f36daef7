"""Questions about a date ahead ("what's happening in December", asked in November):
answered by the memories that mention it, made before it."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from mnemosyne import Mnemosyne
from mnemosyne.core.temporal import dates_ahead, named_time, time_window
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
