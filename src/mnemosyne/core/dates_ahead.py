"""The dates ahead that a query names, as memories may write them.

A date ahead ("on December 3", asked in November; "next Tuesday"; "at Christmas")
names no time memories were made in: memories are made before the time they plan
for. ``dates_ahead`` gives the ways a memory may write each such date, to search
for, and the query without them, for ``temporal`` to read the time it names.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from typing import NamedTuple

from .lexical import tokenize
from .past_tense import in_the_past_tense
from .time_words import (
    DAY,
    DAY_MONTH,
    DAY_MONTH_YEAR,
    DAYS_AHEAD,
    HOLIDAY_WRITTEN,
    HOLIDAYS,
    IN_MONTH,
    ISO_DATE,
    MONTH_DAY,
    MONTH_DAY_YEAR,
    MONTH_NAMES,
    MONTHS,
    WEEKDAY_NUMBERS,
    midnight,
    readable,
)

# A day or month without a year is the coming one, not the latest past, when it
# begins within this many days: asked on November 27, "on December 3" and "in
# January" are ahead, while "in March" is the March past. Plans an agent keeps
# (appointments, deadlines, reviews) are weeks ahead, rarely seasons; further out
# the month of this year's memories is the likelier one.
UPCOMING_DAYS = 61

# Each expression that names a date or a month, in the order the readers read
# them, with the year (None: not said), month and day (None: the whole month) it
# names; None for one that names a time past ("last March").
_DATES: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], tuple[int | None, int, int | None] | None]], ...] = (
    (DAY_MONTH_YEAR, lambda m: (int(m.group(3)), MONTHS[m.group(2)], int(m.group(1)))),
    (MONTH_DAY_YEAR, lambda m: (int(m.group(3)), MONTHS[m.group(1)], int(m.group(2)) if m.group(2) else None)),
    (ISO_DATE, lambda m: (int(m.group(1)), int(m.group(2)), int(m.group(3)))),
    (HOLIDAY_WRITTEN, lambda m: (int(m.group(2)) if m.group(2) else None,
                                 *HOLIDAYS[m.group(1).replace("'", "")])),
    (MONTH_DAY, lambda m: (None, MONTHS[m.group(1)], int(m.group(2)))),
    (DAY_MONTH, lambda m: (None, MONTHS[m.group(2)], int(m.group(1)))),
    (IN_MONTH, lambda m: None if m.group(1) == "last" else (None, MONTHS[m.group(2)], None)),
)


class DatesAhead(NamedTuple):
    """The dates ahead of now that a query names, as memories may write them
    (phrases of the text index's tokens: "december 3", "3rd of dec", "2026 12 03"),
    and the query without them (lower case).

    ``made_after``: a memory that writes a day or month without its year means the
    next one after it was made, so one made a year or more before the first date
    named is about an earlier one ("the boiler was serviced on November 28" a year
    ago). None when the query names a date with its year, or none at all.
    """

    forms: tuple[str, ...]
    rest: str
    made_after: datetime | None = None


def dates_ahead(query: str, now: datetime) -> DatesAhead:
    """The dates ahead of ``now`` that ``query`` names: a full date or month after
    today, a day or month without a year that comes within ``UPCOMING_DAYS`` (asked
    on November 27, "on December 3", "in December", "at Christmas", "in January").

    Memories are made before the time they plan for: a question about one ("what do
    I have on December 10") is answered by those that mention it, whenever they were
    made, not by those made then (none yet). A date past, or further ahead without
    a year, or without a year in a question in the past tense ("what happened at
    Christmas", "what did we do in January"), is a time memories were made in, as
    ``named_time`` reads it.
    """
    text = readable(query)
    seen = text  # each date's words are read once: "December 3, 2026" is not also "December 3"
    forms: list[str] = []
    named: list[tuple[int, int, int | None]] = []
    with_year = False
    past = in_the_past_tense(text)
    for expression, date_of in _DATES:
        for match in expression.finditer(seen):
            date = date_of(match)
            # Asked in the past tense, a day or month without a year is the one past.
            ahead = None if date is None or (past and date[0] is None) else _ahead(now, *date)
            if ahead is not None:
                forms.extend(_written_forms(*ahead, holiday=match.group(1) if expression is HOLIDAY_WRITTEN else None))
                with_year = with_year or date is not None and date[0] is not None
                named.append(ahead)
                text = text[:match.start()] + " " * (match.end() - match.start()) + text[match.end():]
            seen = seen[:match.start()] + " " * (match.end() - match.start()) + seen[match.end():]
    for match in DAYS_AHEAD.finditer(seen):
        dates = _relative_dates_ahead(match, now)
        forms.extend(form for date in dates for form in _written_forms(*date))
        named.extend(dates)
        # The others' words stay: a memory may say "next month" as the question does
        # ("we go camping next month"). "This weekend" and "this Friday" would be
        # read as a time memories were made in.
        if dates and (match.group(1) or "").startswith("this"):
            text = text[:match.start()] + " " * (match.end() - match.start()) + text[match.end():]
    made_after = None if with_year or not named else _a_year_before(min(named, key=_first_day), now)
    return DatesAhead(tuple(dict.fromkeys(forms)), text, made_after)


def _first_day(date: tuple[int, int, int | None]) -> tuple[int, int, int]:
    year, month, day = date
    return year, month, day or 1


def _a_year_before(date: tuple[int, int, int | None], now: datetime) -> datetime:
    year, month, day = _first_day(date)
    try:
        return datetime(year - 1, month, day, tzinfo=now.tzinfo)
    except ValueError:  # February 29
        return datetime(year - 1, month, 28, tzinfo=now.tzinfo)


def _relative_dates_ahead(match: re.Match[str], now: datetime) -> list[tuple[int, int, int | None]]:
    """The dates (a month: day None) ahead of ``now`` that a ``DAYS_AHEAD`` match
    names; none for this week's weekend or Friday once begun. "Next Tuesday" and
    "next weekend" are read both ways people mean them: the coming one and the one
    a week later."""
    today = midnight(now)
    which, unit = match.group(1), match.group(2)
    if unit is None:
        days = [today + (2 if "after" in match.group() else 1) * DAY]
    elif unit == "month":
        if which != "next":
            return []
        following = today.replace(day=28) + 4 * DAY  # a day of the next month
        return [(following.year, following.month, None)]
    elif unit == "week":
        if which != "next":
            return []
        monday = today + (7 - today.weekday()) * DAY
        days = [monday + i * DAY for i in range(7)]
    else:
        first = 5 if unit == "weekend" else WEEKDAY_NUMBERS[unit]
        span = 2 if unit == "weekend" else 1
        if which == "next":
            coming = today + ((first - today.weekday()) % 7 or 7) * DAY
            days = [coming + i * DAY for i in range(span)] + [coming + (7 + i) * DAY for i in range(span)]
        else:  # this week's, where it has not begun
            this_weeks = today + (first - today.weekday()) * DAY
            if this_weeks <= today:
                return []
            days = [this_weeks + i * DAY for i in range(span)]
    return [(day.year, day.month, day.day) for day in days]


def _ahead(now: datetime, year: int | None, month: int, day: int | None) -> tuple[int, int, int | None] | None:
    """The date ahead of ``now`` that ``year``, ``month`` and ``day`` name (its year
    filled in), or None when it has begun or, without a year, comes later than
    ``UPCOMING_DAYS`` from today."""
    today = midnight(now)
    for candidate in (today.year, today.year + 1) if year is None else (year,):
        try:
            start = datetime(candidate, month, day or 1, tzinfo=now.tzinfo)
        except ValueError:  # February 29 in another year, or no such day
            continue
        if start > now:
            return (candidate, month, day) if year is not None or start - today <= UPCOMING_DAYS * DAY else None
    return None


def _written_forms(year: int, month: int, day: int | None, holiday: str | None = None) -> list[str]:
    """How a memory may write a date: its month's names; with a day, the day before
    or after each ("december 3", "dec 3rd", "3 december", "3rd of dec") and as ISO
    ("2026 12 03", as the text index splits "2026-12-03"); a holiday by its name
    too. Not "12/03": day first or month first, it names two dates."""
    names = MONTH_NAMES[month - 1]
    forms = [] if holiday is None else list(dict.fromkeys([" ".join(tokenize(holiday)), holiday.replace("'", "")]))
    if day is None:
        return forms + list(names)
    ordinal = f"{day}{_ordinal_suffix(day)}"
    for name in names:
        forms += [f"{name} {day}", f"{name} {ordinal}", f"{day} {name}", f"{ordinal} {name}", f"{ordinal} of {name}"]
    return [*forms, f"{year} {month:02d} {day:02d}"]


def _ordinal_suffix(day: int) -> str:
    if day in (11, 12, 13):
        return "th"
    return {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
