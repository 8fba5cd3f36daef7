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
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime, timedelta, timezone, tzinfo
from typing import NamedTuple

from .lexical import tokenize, topic_words

DAY = timedelta(days=1)
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

_MONTH_NAMES = [  # each month's full name, then its short ones
    ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",),
    ("june", "jun"), ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"),
    ("october", "oct"), ("november", "nov"), ("december", "dec"),
]
_MONTHS = {name: number for number, names in enumerate(_MONTH_NAMES, start=1) for name in names}
_SHORT_MONTHS = [short for names in _MONTH_NAMES for short in names[1:]]
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
# Not "sat" nor "sun": "on sun exposure" is no Sunday.
_SHORT_WEEKDAYS = {"mon": 0, "tue": 1, "tues": 1, "wed": 2, "thu": 3, "thur": 3, "thurs": 3, "fri": 4}
_WEEKDAY_NUMBERS = {name: number for number, name in enumerate(_WEEKDAYS)} | _SHORT_WEEKDAYS
# Holidays on a fixed date. Movable ones (Easter, Thanksgiving, Mother's Day) fall on
# different days in different countries, so they are not guessed.
# Matched with the query's apostrophes dropped: "valentine's day" reads "valentines day".
_HOLIDAYS = {"new years eve": (12, 31), "new years day": (1, 1), "valentines day": (2, 14),
             "halloween": (10, 31), "christmas eve": (12, 24), "christmas": (12, 25)}
_COUNTS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
           "seven": 7, "eight": 8, "nine": 9, "ten": 10, "few": 3, "couple of": 2, "several": 4}
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}
_UNIT_SECONDS = {"minute": 60, "hour": 3600}

# Words that ask what happened at a time rather than about something: "what
# happened yesterday", "anything new last week", "catch me up on yesterday".
HAPPENING = frozenset("""happen happened happening happens anything something everything new news going went
    work worked working done doing earlier recently lately discuss discussed discussing talk talked talking
    catch list summarise summarize summary recap update updates activity""".split())

_MONTH = "(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_COUNT = r"(\d+|" + "|".join(sorted(_COUNTS, key=len, reverse=True)) + ")"
_UNIT = r"(day|week|month|year)s?"
_YEAR_AFTER = r"(?:,\s*|\s+)(?:of\s+)?(\d{4})\b"  # "May 8 2023", "May 8, 2023", "May of 2023"
_MONTH_DAY_YEAR = re.compile(rf"\b{_MONTH}(?:\s+{_DAY})?{_YEAR_AFTER}")
_DAY_MONTH_YEAR = re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}{_YEAR_AFTER}")
_ISO_DATE = re.compile(r"\b(\d{4})[-/](\d{1,2})[-/](\d{1,2})(?!\d)")  # also "2023-05-08T10:00"
_HOLIDAY = re.compile(r"\b(" + "|".join(_HOLIDAYS) + r")(?:,?\s+(\d{4}))?\b")
_MONTH_DAY = re.compile(rf"\b{_MONTH}\s+{_DAY}\b")
_DAY_MONTH = re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}\b")
# A part of a day, from and to an hour of it (night runs into the next morning).
_PARTS_OF_DAY = {"morning": (5, 12), "afternoon": (12, 18), "evening": (18, 24), "night": (18, 30)}
_PART = r"(?:\s+(morning|afternoon|evening|night)\b)"
_WEEKDAY_NAMES = "|".join(sorted(_WEEKDAY_NUMBERS, key=len, reverse=True))
_WEEKDAY_NAME = f"({_WEEKDAY_NAMES})\\b"
# "on Tuesday", "last Friday", "this Monday evening", and a bare weekday only with a
# part of the day ("Tuesday morning": "the Tuesday sync" is a name). "On Saturday
# mornings" is a habit, not a day.
_WEEKDAY = re.compile(
    rf"\b(?:(on|last|this past|this)\s+{_WEEKDAY_NAME}{_PART}?|{_WEEKDAY_NAME}{_PART})"
    r"(?!\s+(?:mornings|afternoons|evenings|nights)\b)"
)
_WEEKEND = re.compile(r"\b(last|this past|this|the)\s+weekend\b")
_AGO = re.compile(rf"\b{_COUNT}\s+{_UNIT}\s+ago\b")
_PAST = re.compile(rf"\b(?:past|last)\s+(?:{_COUNT}\s+)?{_UNIT}\b")
_BEFORE_LAST = re.compile(r"\b(week|month|year)\s+before\s+last\b")
_THIS = re.compile(r"\bthis\s+(week|month|year)\b")
# "in Jan's calendar" is a person's: a month is written out when it owns something.
# "in mid-April" and "in early May" are read as the whole month (spans are generous).
_IN_MONTH = re.compile(
    rf"\b(in|during|last)\s+(?:(?:early|mid|late)[-\s]+)?(?!(?:{'|'.join(_SHORT_MONTHS)})'s\b){_MONTH}\b"
)
_IN_YEAR = re.compile(r"\bin\s+((?:19|20)\d{2})\b(?![-/]\d)")  # not the year of "in 2026-13-01"
# "since yesterday", "since last Friday", "since Monday", "since March": from then until now.
_SINCE = re.compile(r"\bsince\s+(.+)")
# "an hour ago", "30 minutes ago": around then, counted loosely. "The past hour",
# "the last 30 minutes": from then until now.
_CLOCK_AGO = re.compile(rf"\b{_COUNT}\s+(minute|hour)s?\s+ago\b")
# Not "last minute changes": "last" with a count, or "the last".
_PAST_CLOCK = re.compile(rf"\b(?:past|the\s+last|last(?=\s+\d))\s+(?:{_COUNT}\s+)?(minute|hour)s?\b")
# How loosely "N minutes/hours ago" is counted, at the least (half of N, beyond).
_CLOCK_SLACK = {"minute": 600, "hour": 3600}
# "may" is also a verb: "the 2 may conflict". Next to a bare number, a month is
# "May" with its capital, "on may 2", "2nd may", "2 of may" or one with a year.
_MODAL_MAY = re.compile(r"(?<!\b[oO]n )\b(?:\d{1,2}\s+may|may\s+\d{1,2})\b(?!,?\s*\d{4}\b)")
# Not "the last year" ("in the last year" is the past twelve months, read by _PAST).
_LAST_MONTH_OR_YEAR = re.compile(r"(?<!\bthe )\blast\s+(month|year)\b")


def window_seconds(query: str, now: datetime) -> Window | None:
    """``named_time`` in Unix seconds."""
    found = named_time(query, now)
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
    text = _readable(query)
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


def named_time(query: str, now: datetime) -> NamedTime | None:
    """``time_window``'s span, with the time the query names within it."""
    text = _readable(query)
    # Days are calendar days where the user is: in ``now``'s own time zone.
    today = _midnight(now)
    try:
        if since := _SINCE.search(text):
            # "since March" reads as "in March", "since Monday" as "on Monday"; from the
            # time itself ("since May 8": not the week before it that its span holds).
            if back := _clock_back(_CLOCK_AGO, since.group(1), now):
                return _whole((back[0], today + DAY))
            if found := _read("in " + since.group(1), now) or _read("on " + since.group(1), now):
                return _whole((found.named[0], today + DAY))
        if back := _clock_back(_CLOCK_AGO, text, now):
            then, seconds, unit = back
            slack = timedelta(seconds=max(_CLOCK_SLACK[unit], seconds / 2))  # counted loosely
            return _whole((then - slack, then + slack))
        if back := _clock_back(_PAST_CLOCK, text, now):
            return _whole((back[0], today + DAY))
        return _read(text, now)
    except (OverflowError, ValueError):  # a span past the calendar's ends: no time to favour
        return None


def _readable(query: str) -> str:
    """``query`` as the expressions read it: lower case, plain apostrophes, and the
    verb "may" no month."""
    return _MODAL_MAY.sub(lambda verb: verb.group().replace("may", "-"), query).lower().replace("\u2019", "'")


def _clock_back(expression: re.Pattern[str], text: str, now: datetime) -> tuple[datetime, int, str] | None:
    """The time "2 hours ago" or "the past 30 minutes" (as ``expression`` reads it)
    goes back to, in seconds and its unit: elapsed time, so a clock changed for
    daylight saving in between does not move it."""
    if (match := expression.search(text)) is None:
        return None
    unit = match.group(2)
    seconds = (_count(match.group(1)) if match.group(1) else 1) * _UNIT_SECONDS[unit]
    # Naive stays naive (this machine's zone), as the caller's other times are.
    zone = None if now.tzinfo is None else timezone.utc
    return datetime.fromtimestamp(now.timestamp() - seconds, zone), seconds, unit


def _midnight(now: datetime) -> datetime:
    """The start of ``now``'s calendar day, in its own time zone."""
    return now.replace(hour=0, minute=0, second=0, microsecond=0)


def _read(text: str, now: datetime) -> NamedTime | None:
    found = next((span for read in _READERS if (span := read(text, now)) is not None), None)
    return found if found is None or isinstance(found, NamedTime) else _whole(found)


def _whole(span: Span) -> NamedTime:
    return NamedTime(span, span)


def _full_date(text: str, now: datetime) -> NamedTime | None:
    # Day first: in "8 May, 2023" the month-and-year reading would lose the day.
    if match := _DAY_MONTH_YEAR.search(text):
        return _date_span(int(match.group(3)), _MONTHS[match.group(2)], int(match.group(1)), now.tzinfo)
    if match := _MONTH_DAY_YEAR.search(text):
        day = match.group(2)
        return _date_span(int(match.group(3)), _MONTHS[match.group(1)], int(day) if day else None, now.tzinfo)
    if match := _ISO_DATE.search(text):
        return _date_span(int(match.group(1)), int(match.group(2)), int(match.group(3)), now.tzinfo)
    return None


def _day_without_year(text: str, now: datetime) -> NamedTime | None:
    if match := _HOLIDAY.search(text.replace("'", "")):
        month, day = _HOLIDAYS[match.group(1)]
        if match.group(2):
            return _date_span(int(match.group(2)), month, day, now.tzinfo)
        return _latest(now, month, day)
    if match := _MONTH_DAY.search(text):
        return _latest(now, _MONTHS[match.group(1)], int(match.group(2)))
    if match := _DAY_MONTH.search(text):
        return _latest(now, _MONTHS[match.group(2)], int(match.group(1)))
    return None


def _relative_day(text: str, now: datetime) -> Span | NamedTime | None:
    today = _midnight(now)
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
        ends = today + timedelta(hours=_PARTS_OF_DAY["night"][1] - 24)
        return _part_of(today - DAY if now < ends else today, "night")
    if match := re.search(r"\b(?:today|this (morning|afternoon|evening))\b", text):
        return _part_of(today, match.group(1) or _part_after("today", text))
    if match := _WEEKDAY.search(text):
        weekday = _WEEKDAY_NUMBERS[match.group(2) or match.group(4)]
        part = match.group(3) or match.group(5)
        if match.group(1) == "this":  # this week's, even when still ahead
            return _part_of(today + (weekday - today.weekday()) * DAY, part)
        # The latest such day before today: on a Friday, "last Friday" is a week ago.
        back = (today.weekday() - weekday - 1) % 7 + 1
        if match.group(4) and back == 7 and now >= _hours_of(today, part)[0]:
            back = 0  # but a bare "Friday afternoon" is the latest begun: on a Friday evening, today's
        return _part_of(today - back * DAY, part)
    if match := _WEEKEND.search(text):
        # "last weekend" ended before this week began; "this weekend" is this week's,
        # even when still ahead; "over the weekend" is the latest one begun.
        monday = today - today.weekday() * DAY
        this_weeks = match.group(1) == "this" or (match.group(1) == "the" and today.weekday() >= 5)
        saturday = monday + (5 if this_weeks else -2) * DAY
        return saturday, saturday + 2 * DAY
    return None


def _part_after(day: str, text: str) -> str | None:
    """The part of the day said right after ``day`` ("yesterday afternoon")."""
    match = re.search(rf"\b{day}{_PART}", text)
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
    start, end = _PARTS_OF_DAY[part]
    return day + timedelta(hours=start), day + timedelta(hours=end)


def _relative_span(text: str, now: datetime) -> Span | NamedTime | None:
    today = _midnight(now)
    if match := _LAST_MONTH_OR_YEAR.search(text):
        # The calendar month or year before this one: said on May 10, "last month"
        # is April (and, as "in April", a fortnight after it), "last year" is last year.
        if match.group(1) == "month":
            previous = today.replace(day=1) - DAY
            return _date_span(previous.year, previous.month, None, today.tzinfo)
        return _year_span(today.year - 1, today.tzinfo)
    if match := _BEFORE_LAST.search(text):
        # Two of them back, as "last week" (the past eight days), "last month" and
        # "last year" (calendar ones) are one back.
        if match.group(1) == "week":
            return today - 15 * DAY, today - 8 * DAY
        if match.group(1) == "month":
            previous = (today.replace(day=1) - DAY).replace(day=1) - DAY
            return _date_span(previous.year, previous.month, None, today.tzinfo)
        return _year_span(today.year - 2, today.tzinfo)
    if match := _AGO.search(text):
        unit = _UNIT_DAYS[match.group(2)]
        then = today - _count(match.group(1)) * unit * DAY
        if unit == 1:  # that day, or the one before when counted loosely (today only if named)
            return NamedTime((then - DAY, then + DAY), (then, then + DAY))
        slack = timedelta(days=unit / 2 + 3)  # weeks, months, years ago: counted loosely
        # Named: the week around that day, three days either side.
        return NamedTime((then - slack, then + slack), (then - 3 * DAY, then + 4 * DAY))
    if match := _PAST.search(text):
        days = (_count(match.group(1)) if match.group(1) else 1) * _UNIT_DAYS[match.group(2)]
        # Named: from that long before now (elapsed, as "the past 24 hours"); the span
        # holds the whole calendar day it began on, and the one before.
        return NamedTime((today - timedelta(days=days) - DAY, today + DAY), (now - timedelta(days=days), today + DAY))
    if match := _THIS.search(text):
        start = {
            "week": today - today.weekday() * DAY,
            "month": today.replace(day=1),
            "year": today.replace(month=1, day=1),
        }[match.group(1)]
        return start, today + DAY
    return None


def _named_month_or_year(text: str, now: datetime) -> Span | NamedTime | None:
    if match := _IN_MONTH.search(text):
        # The latest such month begun; "last March" said in March is a year ago.
        month = _MONTHS[match.group(2)]
        this_year = month < now.month or (month == now.month and match.group(1) != "last")
        return _date_span(now.year if this_year else now.year - 1, month, None, now.tzinfo)
    if match := _IN_YEAR.search(text):
        return _year_span(int(match.group(1)), now.tzinfo)
    return None


def _year_span(year: int, zone: tzinfo | None) -> Span:
    return datetime(year, 1, 1, tzinfo=zone), datetime(year + 1, 1, 1, tzinfo=zone)


# Each reads a query's text (lower case) relative to ``now``.
_READERS: tuple[Callable[[str, datetime], Span | NamedTime | None], ...] = (
    _full_date, _day_without_year, _relative_day, _relative_span, _named_month_or_year,
)
_RELATIVE_DAY = re.compile(
    rf"\b(?:the\s+)?(?:day\s+before\s+)?yesterday\b{_PART}?|\blast\s+night\b|\btoday\b{_PART}?|\btonight\b"
    r"|\bthis\s+(?:morning|afternoon|evening)\b"
)
def without_counts_back(query: str) -> str:
    """``query`` without the times it counts back from now in days, hours or minutes
    ("3 days ago", "the past 2 days", "30 minutes ago"; lower case): they say how far back,
    not what about ("where did I park 3 days ago" is not about "3" nor "days"). Named
    times stay: "in August" or "on Valentine's day" in a memory's text may well be
    what a question about them looks for."""
    text = _readable(query)
    for expression in _COUNTS_BACK:
        text = expression.sub(" ", text)
    return text


# A holiday as a query may write it, with or without its apostrophe.
_HOLIDAY_WRITTEN = re.compile(
    r"\b(?:" + "|".join("'?".join(map(re.escape, name)) for name in _HOLIDAYS) + r")(?:,?\s+\d{4})?\b"
)
# "since" and what it reads as "in" or "on" ("since March", "since Monday", "since
# 2022"); the other times after it ("since last Friday") are taken out by their own.
_SINCE_WORDS = re.compile(
    rf"\bsince(?:\s+(?:{_MONTH}|{_WEEKDAY_NAMES}|(?:19|20)\d{{2}})\b)?"
)
# Every expression a reader or ``named_time`` reads a time from, in the order they
# are taken out of a query: a time's words and no others (not the rest of a query
# after "since").
_TIMES = (
    _CLOCK_AGO, _PAST_CLOCK, _DAY_MONTH_YEAR, _MONTH_DAY_YEAR, _ISO_DATE, _HOLIDAY_WRITTEN, _MONTH_DAY, _DAY_MONTH,
    _RELATIVE_DAY, _WEEKDAY, _WEEKEND, _LAST_MONTH_OR_YEAR, _BEFORE_LAST, _AGO, _PAST, _THIS, _IN_MONTH, _IN_YEAR,
    _SINCE_WORDS,
)
# Times counted back in days, hours or minutes ("the past 2 days", not "last week"):
# a memory's own "4 years ago" or "last week" likely means what a question asking
# "4 years ago" does, while its "3 days ago" was another day unless told today.
_COUNTS_BACK = (re.compile(
    rf"\b(?:{_COUNT}\s+(?:day|hour|minute)s?\s+ago|(?:past|last)\s+{_COUNT}\s+(?:day|hour|minute)s?)\b"
),)


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
    return int(word) if word.isdigit() else _COUNTS[word]
