"""Time named in a query: "in May 2023", "8 May, 2023", "2023-05-08", "on May 8th",
"3 weeks ago", "2 hours ago", "30 minutes ago", "the past hour", "last week", "the
week before last", "last month", "in mid-April", "since March", "last Friday", "this
Monday", "Tuesday afternoon", "yesterday morning", "last weekend", "on Valentine's day".

``time_window(query, now)`` returns the span a query points at, or None. Recall
favours memories created inside it and never hides the others ("what did we decide
last week" may be answered by an older memory). Spans are generous on purpose:
people say "in May" of something recorded on June 2nd. A date without a year ("on
May 8", "at Christmas") is its latest occurrence up to ``now``: memories are of the
past. Within its span, ``named_time`` tells the time itself, which a listing keeps to:
the day of "3 days ago", the afternoon of "on Tuesday afternoon".

"Recently", "the latest", "where did we leave off" name the time up to the latest
memory (``asks_recent``, ``asks_latest``). A date ahead ("on December 3", asked in
November) names no time memories were made in: ``dates_ahead`` (its own module)
takes it out of the query first. The words of times are in ``time_words``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime, timedelta, timezone, tzinfo
from typing import NamedTuple

from .dates_ahead import dates_ahead
from .lexical import tokenize, topic_words
from .time_words import (
    AGO,
    BEFORE_LAST,
    CLOCK_AGO,
    COUNTS,
    DAY,
    DAY_MONTH,
    DAY_MONTH_YEAR,
    DAYS_AHEAD,
    HOLIDAY,
    HOLIDAY_WRITTEN,
    HOLIDAYS,
    IN_MONTH,
    IN_YEAR,
    ISO_DATE,
    LAST_CALENDAR_UNIT,
    LATEST,
    MONTH_DAY,
    MONTH_DAY_YEAR,
    MONTHS,
    PART,
    PARTS_OF_DAY,
    PAST,
    PAST_CLOCK,
    RECENT,
    RELATIVE_DAY,
    SINCE,
    SINCE_WORDS,
    THIS,
    UNIT_DAYS,
    UNIT_SECONDS,
    WEEKDAY,
    WEEKDAY_NUMBERS,
    WEEKEND,
    midnight,
    readable,
)

Span = tuple[datetime, datetime]


class NamedTime(NamedTuple):
    """The span of memories a query's time points at, and within it the time itself:
    "on May 8" names that day, and its span holds the week before and two weeks
    after, when such a day is told about. Most times are their whole span."""

    span: Span
    named: Span


class Window(NamedTuple):
    """A ``NamedTime`` in Unix seconds, each part ``[start, end)``."""

    start: float
    end: float
    named_start: float
    named_end: float

    @property
    def span(self) -> tuple[float, float]:
        return self.start, self.end

    @property
    def named(self) -> tuple[float, float]:
        return self.named_start, self.named_end


# Words that ask what happened at a time rather than about something: "what
# happened yesterday", "anything new last week", "catch me up on yesterday", "what
# changed in July", "what did we decide last week", "events in July", "any progress
# today". With another word beside them a question is topical again: "what did we
# decide about the database in July".
HAPPENING = frozenset("""happen happened happening happens anything something everything new news going went
    work worked working done doing earlier recently lately discuss discussed discussing talk talked talking
    catch list summarise summarize summary recap update updates activity activities change changed changes
    changing decide decided decision decisions agree agreed event events occur occurred progress
    plan plans planned schedule scheduled upcoming due""".split())

# Every expression a reader or ``named_time`` reads a time from, in the order they
# are taken out of a query: a time's words and no others (not the rest of a query
# after "since").
_TIMES = (
    CLOCK_AGO, PAST_CLOCK, DAY_MONTH_YEAR, MONTH_DAY_YEAR, ISO_DATE, HOLIDAY_WRITTEN, MONTH_DAY, DAY_MONTH,
    DAYS_AHEAD, RELATIVE_DAY, WEEKDAY, WEEKEND, LAST_CALENDAR_UNIT, BEFORE_LAST, AGO, PAST, THIS, IN_MONTH,
    IN_YEAR, SINCE_WORDS, RECENT,
)

# How loosely "N minutes/hours ago" is counted, at the least (half of N, beyond).
_CLOCK_SLACK = {"minute": 600, "hour": 3600}
# How far back "recently" reaches: a topical question ("the latest on the
# migration") favours the week up to the latest memory, a topic not coming up every
# day; a question about nothing else ("where did we leave off", "what did we do
# recently") lists the day up to it. Counted from the latest memory, not from now:
# an agent back after two weeks means its last working day, not the empty week
# before now.
RECENT_DAYS = 7


def window_seconds(query: str, now: datetime, last_active: datetime | None = None) -> Window | None:
    """``named_time`` in Unix seconds."""
    found = named_time(query, now, last_active)
    try:
        return None if found is None else Window(*(end.timestamp() for end in (*found.span, *found.named)))
    except (OverflowError, OSError, ValueError):  # a naive time the machine's zone cannot place
        return None


def asks_only_when(query: str) -> bool:
    """Whether a query asks about a time and nothing else ("what happened yesterday"):
    then every memory of that time answers it. Words are the time's only inside a
    time it names: "who was late yesterday" asks about someone late, "what happened
    to 4521 yesterday" about 4521."""
    return all(word in HAPPENING for word in topic_words(tokenize(without_times(query))))


def without_times(query: str) -> str:
    """``query`` with every time this module reads taken out of it (lower case):
    "where did I park 3 days ago" is "where did i park ". Its other words keep their
    apostrophes ("the user's messages")."""
    text = readable(query)
    for expression in _TIMES:
        text = expression.sub(" ", text)
    return text


def time_window(query: str, now: datetime) -> Span | None:
    """The ``[start, end)`` span that ``query`` names, relative to ``now``: the user's
    wall-clock time, aware, or naive for this machine's time zone.

    The most precise expression wins: a full date before a day without a year,
    before a relative day, before a span of weeks, months or years.
    """
    found = named_time(query, now)
    return None if found is None else found.span


def asks_recent(query: str) -> bool:
    """Whether the time a query names may be the latest of what is remembered ("what
    did we do recently", "where did we leave off", "what's the latest on the
    migration"): ``named_time`` then counts back from the latest memory's time."""
    text = readable(query)
    return LATEST.search(text) is not None or (RECENT.search(text) is not None and asks_only_when(query))


def asks_latest(query: str, now: datetime) -> bool:
    """Whether a query asks for the latest state of something and names no other
    time ("what's the latest on the migration", "what's the next step"): the recent
    time it names is then what its answer must be of, more than a time's memories
    are favoured otherwise."""
    text = dates_ahead(query, now).rest
    return LATEST.search(text) is not None and _calendar_time(text, now) is None


def named_time(query: str, now: datetime, last_active: datetime | None = None) -> NamedTime | None:
    """``time_window``'s span, with the time the query names within it. A date ahead
    (see ``dates_ahead``) names none; "recently" and its like (see ``asks_recent``),
    when no other time is named, the time up to ``last_active``, the latest
    memory's (default ``now``)."""
    text = dates_ahead(query, now).rest
    found = _calendar_time(text, now)
    if found is not None or not asks_recent(query):
        return found
    return _recent(now, last_active)


def _calendar_time(text: str, now: datetime) -> NamedTime | None:
    """The time ``text`` (readable) names on the calendar, relative to ``now``."""
    # Days are calendar days where the user is: in ``now``'s own time zone.
    today = midnight(now)
    try:
        if since := SINCE.search(text):
            # "since March" reads as "in March", "since Monday" as "on Monday"; from the
            # time itself ("since May 8": not the week before it that its span holds).
            if back := _clock_back(CLOCK_AGO, since.group(1), now):
                return _whole((back[0], today + DAY))
            if found := _read("in " + since.group(1), now) or _read("on " + since.group(1), now):
                return _whole((found.named[0], today + DAY))
        if back := _clock_back(CLOCK_AGO, text, now):
            then, seconds, unit = back
            slack = timedelta(seconds=max(_CLOCK_SLACK[unit], seconds / 2))  # counted loosely
            return _whole((then - slack, then + slack))
        if back := _clock_back(PAST_CLOCK, text, now):
            return _whole((back[0], today + DAY))
        return _read(text, now)
    except (OverflowError, ValueError):  # a span past the calendar's ends: no time to favour
        return None


def _recent(now: datetime, last_active: datetime | None) -> NamedTime | None:
    """The time "recently" names: the ``RECENT_DAYS`` up to the latest memory, on to
    today's end (newer shared memories of others are recent too); as the time
    itself, the day up to the latest memory, and it included."""
    latest = now if last_active is None else min(last_active, now)
    try:
        return NamedTime((latest - RECENT_DAYS * DAY, midnight(now) + DAY),
                         (latest - DAY, latest + timedelta(microseconds=1)))
    except OverflowError:  # at the calendar's ends: no time to favour
        return None


def _clock_back(expression: re.Pattern[str], text: str, now: datetime) -> tuple[datetime, int, str] | None:
    """The time "2 hours ago" or "the past 30 minutes" (as ``expression`` reads it)
    goes back to, in seconds and its unit: elapsed time, so a clock changed for
    daylight saving in between does not move it."""
    if (match := expression.search(text)) is None:
        return None
    unit = match.group(2)
    seconds = (_count(match.group(1)) if match.group(1) else 1) * UNIT_SECONDS[unit]
    # Naive stays naive (this machine's zone), as the caller's other times are.
    zone = None if now.tzinfo is None else timezone.utc
    return datetime.fromtimestamp(now.timestamp() - seconds, zone), seconds, unit


def _read(text: str, now: datetime) -> NamedTime | None:
    found = next((span for read in _READERS if (span := read(text, now)) is not None), None)
    return found if found is None or isinstance(found, NamedTime) else _whole(found)


def _whole(span: Span) -> NamedTime:
    return NamedTime(span, span)


def _full_date(text: str, now: datetime) -> NamedTime | None:
    # Day first: in "8 May, 2023" the month-and-year reading would lose the day.
    if match := DAY_MONTH_YEAR.search(text):
        return _date_span(int(match.group(3)), MONTHS[match.group(2)], int(match.group(1)), now.tzinfo)
    if match := MONTH_DAY_YEAR.search(text):
        day = match.group(2)
        return _date_span(int(match.group(3)), MONTHS[match.group(1)], int(day) if day else None, now.tzinfo)
    if match := ISO_DATE.search(text):
        return _date_span(int(match.group(1)), int(match.group(2)), int(match.group(3)), now.tzinfo)
    return None


def _day_without_year(text: str, now: datetime) -> NamedTime | None:
    if match := HOLIDAY.search(text.replace("'", "")):
        month, day = HOLIDAYS[match.group(1)]
        if match.group(2):
            return _date_span(int(match.group(2)), month, day, now.tzinfo)
        return _latest(now, month, day)
    if match := MONTH_DAY.search(text):
        return _latest(now, MONTHS[match.group(1)], int(match.group(2)))
    if match := DAY_MONTH.search(text):
        return _latest(now, MONTHS[match.group(2)], int(match.group(1)))
    return None


def _relative_day(text: str, now: datetime) -> Span | NamedTime | None:
    today = midnight(now)
    if "day before yesterday" in text:
        return _part_of(today - 2 * DAY, _part_after("day before yesterday", text))
    if "yesterday" in text:
        return _part_of(today - DAY, _part_after("yesterday", text))
    if "last night" in text:
        # Yesterday's night; a topical question also searches the evening before and
        # all of today, when it may have been told about.
        return NamedTime((today - DAY, today + DAY), _hours_of(today - DAY, "night"))
    if re.search(r"\btonight\b", text):
        # Today's night, or before it ends (at 6 in the morning) the one under way.
        ends = today + timedelta(hours=PARTS_OF_DAY["night"][1] - 24)
        return _part_of(today - DAY if now < ends else today, "night")
    if match := re.search(r"\b(?:today|this (morning|afternoon|evening))\b", text):
        return _part_of(today, match.group(1) or _part_after("today", text))
    if match := WEEKDAY.search(text):
        weekday = WEEKDAY_NUMBERS[match.group(2) or match.group(4)]
        part = match.group(3) or match.group(5)
        if match.group(1) == "this":  # this week's (one still ahead is a date ahead: see dates_ahead)
            return _part_of(today + (weekday - today.weekday()) * DAY, part)
        # The latest such day before today: on a Friday, "last Friday" is a week ago.
        back = (today.weekday() - weekday - 1) % 7 + 1
        if match.group(4) and back == 7 and now >= _hours_of(today, part)[0]:
            back = 0  # but a bare "Friday afternoon" is the latest begun: on a Friday evening, today's
        return _part_of(today - back * DAY, part)
    if match := WEEKEND.search(text):
        # "last weekend" ended before this week began; "this weekend" is this week's
        # (still ahead, a date ahead: see dates_ahead); "over the weekend" is the
        # latest one begun.
        monday = today - today.weekday() * DAY
        this_weeks = match.group(1) == "this" or (match.group(1) == "the" and today.weekday() >= 5)
        saturday = monday + (5 if this_weeks else -2) * DAY
        return saturday, saturday + 2 * DAY
    return None


def _part_after(day: str, text: str) -> str | None:
    """The part of the day said right after ``day`` ("yesterday afternoon")."""
    match = re.search(rf"\b{day}{PART}", text)
    return None if match is None else match.group(1)


def _part_of(day: datetime, part: str | None) -> Span | NamedTime:
    """``day``, or the ``part`` of it a query names: a topical question searches the
    whole day (and a night's early hours), a listing keeps to the part."""
    if part is None:
        return day, day + DAY
    named = _hours_of(day, part)
    return NamedTime((day, max(day + DAY, named[1])), named)


def _hours_of(day: datetime, part: str) -> Span:
    """The hours of ``day`` that ``part`` of it names (a night's run into the next)."""
    start, end = PARTS_OF_DAY[part]
    return day + timedelta(hours=start), day + timedelta(hours=end)


def _relative_span(text: str, now: datetime) -> Span | NamedTime | None:
    today = midnight(now)
    if match := LAST_CALENDAR_UNIT.search(text):
        # The calendar week, month or year before this one: said on May 10, "last
        # month" is April (and, as "in April", a fortnight after it), "last year" is
        # last year. "Last week" also holds the days since (some say it of the past
        # seven days): said on a Friday, from the Monday eleven days before.
        if match.group(1) == "week":
            monday = today - (today.weekday() + 7) * DAY
            return NamedTime((monday - DAY, today + DAY), (monday, today + DAY))
        if match.group(1) == "month":
            previous = today.replace(day=1) - DAY
            return _date_span(previous.year, previous.month, None, today.tzinfo)
        return _year_span(today.year - 1, today.tzinfo)
    if match := BEFORE_LAST.search(text):
        # Two calendar ones back, as "last week", "last month" and "last year" are one
        # back (a week with the day before it).
        if match.group(1) == "week":
            monday = today - (today.weekday() + 14) * DAY
            return monday - DAY, monday + 7 * DAY
        if match.group(1) == "month":
            previous = (today.replace(day=1) - DAY).replace(day=1) - DAY
            return _date_span(previous.year, previous.month, None, today.tzinfo)
        return _year_span(today.year - 2, today.tzinfo)
    if match := AGO.search(text):
        unit = UNIT_DAYS[match.group(2)]
        then = today - _count(match.group(1)) * unit * DAY
        if unit == 1:  # that day, or the one before when counted loosely (today only if named)
            return NamedTime((then - DAY, then + DAY), (then, then + DAY))
        slack = timedelta(days=unit / 2 + 3)  # weeks, months, years ago: counted loosely
        # Named: the week around that day, three days either side.
        return NamedTime((then - slack, then + slack), (then - 3 * DAY, then + 4 * DAY))
    if match := PAST.search(text):
        days = (_count(match.group(1)) if match.group(1) else 1) * UNIT_DAYS[match.group(2)]
        # Named: from that long before now (elapsed, as "the past 24 hours"); the span
        # holds the whole calendar day it began on, and the one before.
        return NamedTime((today - timedelta(days=days) - DAY, today + DAY), (now - timedelta(days=days), today + DAY))
    if match := THIS.search(text):
        start = {
            "week": today - today.weekday() * DAY,
            "month": today.replace(day=1),
            "year": today.replace(month=1, day=1),
        }[match.group(1)]
        return start, today + DAY
    return None


def _named_month_or_year(text: str, now: datetime) -> Span | NamedTime | None:
    if match := IN_MONTH.search(text):
        # The latest such month begun; "last March" said in March is a year ago.
        month = MONTHS[match.group(2)]
        this_year = month < now.month or (month == now.month and match.group(1) != "last")
        return _date_span(now.year if this_year else now.year - 1, month, None, now.tzinfo)
    if match := IN_YEAR.search(text):
        return _year_span(int(match.group(1)), now.tzinfo)
    return None


def _year_span(year: int, zone: tzinfo | None) -> Span:
    return datetime(year, 1, 1, tzinfo=zone), datetime(year + 1, 1, 1, tzinfo=zone)


# Each reads a query's text (lower case) relative to ``now``.
_READERS: tuple[Callable[[str, datetime], Span | NamedTime | None], ...] = (
    _full_date, _day_without_year, _relative_day, _relative_span, _named_month_or_year,
)


def _date_span(year: int, month: int, day: int | None, zone: tzinfo | None) -> NamedTime | None:
    try:
        if day is not None:
            start = datetime(year, month, day, tzinfo=zone)
            # Things are told about after they happen, rarely before.
            return NamedTime((start - 7 * DAY, start + 14 * DAY), (start, start + DAY))
        start = datetime(year, month, 1, tzinfo=zone)
    except ValueError:  # "February 30, 2024", "2024-13-01": not a date, so no span
        return None
    following = datetime(year + month // 12, month % 12 + 1, 1, tzinfo=zone)
    return NamedTime((start, start + 45 * DAY), (start, following))


def _latest(today: datetime, month: int, day: int) -> NamedTime | None:
    """The span of ``month``/``day`` in the latest year where it is not after today
    (February 29 comes back within eight years; a day no year has, never)."""
    year = today.year if (month, day) <= (today.month, today.day) else today.year - 1
    for candidate in range(year, max(year - 8, 0), -1):
        if (span := _date_span(candidate, month, day, today.tzinfo)) is not None:
            return span
    return None


def _count(word: str) -> int:
    return int(word) if word.isdigit() else COUNTS[word]
