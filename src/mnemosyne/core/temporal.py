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
November) names no time memories were made in: ``dates_ahead`` gives the ways a
memory may write it, to search for.
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
# happened yesterday", "anything new last week", "catch me up on yesterday", "what
# changed in July", "what did we decide last week", "events in July", "any progress
# today". With another word beside them a question is topical again: "what did we
# decide about the database in July".
HAPPENING = frozenset("""happen happened happening happens anything something everything new news going went
    work worked working done doing earlier recently lately discuss discussed discussing talk talked talking
    catch list summarise summarize summary recap update updates activity activities change changed changes
    changing decide decided decision decisions agree agreed event events occur occurred progress
    plan plans planned schedule scheduled upcoming due""".split())

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
# The days ahead a query names relative to today: "tomorrow", "the day after
# tomorrow", "next week", "next weekend", "next Tuesday", "this weekend" and "this
# Friday" (when still ahead), "next month".
_DAYS_AHEAD = re.compile(
    rf"\b(?:(?:the\s+)?day\s+after\s+tomorrow|tomorrow|(next|this(?:\s+coming)?)\s+(week|weekend|month|{_WEEKDAY_NAMES})\b)"
)
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
# Words that ask for the latest state of something: "what's the latest on the
# migration", "the most recent deploy", "where did we leave off", "what were we
# doing", and of "what's the next step" or "what should I do next" the word "next"
# (the step is a topic). Not "from earliest to latest" (an order), nor "next week"
# (a time ahead).
_LATEST = re.compile(
    r"\bmost\s+recent(?:ly)?\b|(?<!\bto )\blatest\b(?!\s+to\b)"
    r"|\b(?:pick(?:ing)?\s+up\s+)?(?:from\s+)?where\s+(?:\w+\s+){1,2}(?:leave|left)\s+off\b"
    r"|\bwhat\s+(?:were|was)\s+(?:we|i|you)\s+(?:doing|working\s+on|up\s+to)\b"
    r"|\b(?:up\s+)?next\b(?=\s+(?:steps?|tasks?|things?|actions?|up)\b|\s*(?:[?.!]|$))"
)
# Those, and words that name the latest time loosely: "what did we do recently",
# "anything new lately", "what did we do last time", "so far". Beside a topic they
# say loosely when it happened ("what did Melanie paint recently" may be answered
# by a memory of months ago), and name no time: measured on LoCoMo, whose
# "recently" is the conversation's, favouring the week up to the latest memory for
# its 30 such questions ranked 7 answers lower and none higher (R@5 0.722 -> 0.719).
_RECENT = re.compile(
    _LATEST.pattern + r"|\brecent(?:ly)?\b|\blately\b|\bof\s+late\b|\bso\s+far\b|\blast\s+time\b"
)
# How far back "recently" reaches: a topical question ("the latest on the
# migration") favours the week up to the latest memory, a topic not coming up every
# day; a question about nothing else ("where did we leave off", "what did we do
# recently") lists the day up to it. Counted from the latest memory, not from now:
# an agent back after two weeks means its last working day, not the empty week
# before now.
RECENT_DAYS = 7
# A day or month without a year is the coming one, not the latest past, when it
# begins within this many days: asked on November 27, "on December 3" and "in
# January" are ahead, while "in March" is the March past. Plans an agent keeps
# (appointments, deadlines, reviews) are weeks ahead, rarely seasons; further out
# the month of this year's memories is the likelier one.
UPCOMING_DAYS = 61


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


def asks_recent(query: str) -> bool:
    """Whether the time a query names may be the latest of what is remembered ("what
    did we do recently", "where did we leave off", "what's the latest on the
    migration"): ``named_time`` then counts back from the latest memory's time."""
    text = _readable(query)
    return _LATEST.search(text) is not None or (_RECENT.search(text) is not None and asks_only_when(query))


def asks_latest(query: str, now: datetime) -> bool:
    """Whether a query asks for the latest state of something and names no other
    time ("what's the latest on the migration", "what's the next step"): the recent
    time it names is then what its answer must be of, more than a time's memories
    are favoured otherwise."""
    text = dates_ahead(query, now).rest
    return _LATEST.search(text) is not None and _calendar_time(text, now) is None


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


def _recent(now: datetime, last_active: datetime | None) -> NamedTime | None:
    """The time "recently" names: the ``RECENT_DAYS`` up to the latest memory, on to
    today's end (newer shared memories of others are recent too); as the time
    itself, the day up to the latest memory, and it included."""
    latest = now if last_active is None else min(last_active, now)
    try:
        return NamedTime((latest - RECENT_DAYS * DAY, _midnight(now) + DAY),
                         (latest - DAY, latest + timedelta(microseconds=1)))
    except OverflowError:  # at the calendar's ends: no time to favour
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
        if match.group(1) == "this":  # this week's (one still ahead is a date ahead: see dates_ahead)
            return _part_of(today + (weekday - today.weekday()) * DAY, part)
        # The latest such day before today: on a Friday, "last Friday" is a week ago.
        back = (today.weekday() - weekday - 1) % 7 + 1
        if match.group(4) and back == 7 and now >= _hours_of(today, part)[0]:
            back = 0  # but a bare "Friday afternoon" is the latest begun: on a Friday evening, today's
        return _part_of(today - back * DAY, part)
    if match := _WEEKEND.search(text):
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


class Worded(NamedTuple):
    """A query's words as searched: ``rest`` without its times relative to now (lower
    case), and ``phrases``, those times as a memory telling of them writes them."""

    rest: str
    phrases: tuple[str, ...]


def relative_times_apart(query: str) -> Worded:
    """``query`` with its times relative to now ("last week", "this month",
    "yesterday", "on Friday", "3 days ago", "recently") taken out of its words: they
    say when, not what about. "Any changes this month" is not about a month, nor is
    a memory of "3 weeks" one of "last week".

    Each is searched as the phrase it is ("last week", "this month", "last
    weekend"): a memory's own "last weekend" is often what a question asking "last
    weekend" echoes. Not a count of days, hours or minutes back ("where did I park 3
    days ago": a memory's own "3 days ago" was another day unless told today), nor
    "recently" and its like, nor "since". A count of weeks, months or years stays
    words ("4 years ago", "the past few months"): a memory says how long in them ("I've
    known them for 4 years"). So do dates ("in August", "on Valentine's day"): a
    memory naming one names that same time.
    """
    text = _readable(query)
    for expression in _UNSEARCHED:
        text = expression.sub(" ", text)
    phrases: list[str] = []

    def echoed(match: re.Match[str]) -> str:
        if _LONG_COUNT.search(match.group()):
            return match.group()
        words = tokenize(match.group())
        phrases.append(" ".join(words[1:] if words[:1] == ["on"] else words))
        return " "

    for expression in _ECHOED:
        text = expression.sub(echoed, text)
    return Worded(text, tuple(dict.fromkeys(phrase for phrase in phrases if phrase)))


class DatesAhead(NamedTuple):
    """The dates ahead of now that a query names, as memories may write them
    (phrases of the text index's tokens: "december 3", "3rd of dec", "2026 12 03"),
    and the query without them (lower case)."""

    forms: tuple[str, ...]
    rest: str


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
    text = _readable(query)
    seen = text  # each date's words are read once: "December 3, 2026" is not also "December 3"
    forms: list[str] = []
    past = _PAST_TENSE.search(text) is not None
    for expression, date_of in _DATES:
        for match in expression.finditer(seen):
            date = date_of(match)
            # Asked in the past tense, a day or month without a year is the one past.
            ahead = None if date is None or (past and date[0] is None) else _ahead(now, *date)
            if ahead is not None:
                forms.extend(_written_forms(*ahead, holiday=match.group(1) if expression is _HOLIDAY_WRITTEN else None))
                text = text[:match.start()] + " " * (match.end() - match.start()) + text[match.end():]
            seen = seen[:match.start()] + " " * (match.end() - match.start()) + seen[match.end():]
    for match in _DAYS_AHEAD.finditer(seen):
        dates = _relative_dates_ahead(match, now)
        forms.extend(form for date in dates for form in _written_forms(*date))
        # The others' words stay: a memory may say "next month" as the question does
        # ("we go camping next month"). "This weekend" and "this Friday" would be
        # read as a time memories were made in.
        if dates and (match.group(1) or "").startswith("this"):
            text = text[:match.start()] + " " * (match.end() - match.start()) + text[match.end():]
    return DatesAhead(tuple(dict.fromkeys(forms)), text)


def _relative_dates_ahead(match: re.Match[str], now: datetime) -> list[tuple[int, int, int | None]]:
    """The dates (a month: day None) ahead of ``now`` that a ``_DAYS_AHEAD`` match
    names; none for this week's weekend or Friday once begun. "Next Tuesday" and
    "next weekend" are read both ways people mean them: the coming one and the one
    a week later."""
    today = _midnight(now)
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
        first = 5 if unit == "weekend" else _WEEKDAY_NUMBERS[unit]
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
    today = _midnight(now)
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
    names = _MONTH_NAMES[month - 1]
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


# A holiday as a query may write it, with or without its apostrophe.
_HOLIDAY_WRITTEN = re.compile(
    r"\b(" + "|".join("'?".join(map(re.escape, name)) for name in _HOLIDAYS) + r")(?:,?\s+(\d{4}))?\b"
)
# Each expression that names a date or a month, in the order the readers read
# them, with the year (None: not said), month and day (None: the whole month) it
# names; None for one that names a time past ("last March").
_DATES: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], tuple[int | None, int, int | None] | None]], ...] = (
    (_DAY_MONTH_YEAR, lambda m: (int(m.group(3)), _MONTHS[m.group(2)], int(m.group(1)))),
    (_MONTH_DAY_YEAR, lambda m: (int(m.group(3)), _MONTHS[m.group(1)], int(m.group(2)) if m.group(2) else None)),
    (_ISO_DATE, lambda m: (int(m.group(1)), int(m.group(2)), int(m.group(3)))),
    (_HOLIDAY_WRITTEN, lambda m: (int(m.group(2)) if m.group(2) else None,
                                  *_HOLIDAYS[m.group(1).replace("'", "")])),
    (_MONTH_DAY, lambda m: (None, _MONTHS[m.group(1)], int(m.group(2)))),
    (_DAY_MONTH, lambda m: (None, _MONTHS[m.group(2)], int(m.group(1)))),
    (_IN_MONTH, lambda m: None if m.group(1) == "last" else (None, _MONTHS[m.group(2)], None)),
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
    _DAYS_AHEAD, _RELATIVE_DAY, _WEEKDAY, _WEEKEND, _LAST_MONTH_OR_YEAR, _BEFORE_LAST, _AGO, _PAST, _THIS, _IN_MONTH,
    _IN_YEAR, _SINCE_WORDS, _RECENT,
)
# The times relative to now that are no words of a query's (see
# ``relative_times_apart``): counts of days, hours or minutes back, "recently" and
# its like, "since".
_UNSEARCHED = (
    re.compile(rf"\b(?:{_COUNT}\s+(?:day|hour|minute)s?\s+ago|(?:past|last)\s+{_COUNT}\s+(?:day|hour|minute)s?)\b"),
    _RECENT, re.compile(r"\bsince\b"),
)
# Those searched as the phrase they are, unless they count weeks, months or years
# (``_LONG_COUNT``: kept as words). Searching "4 years ago" as a phrase lost LoCoMo's
# "where did Caroline move from 4 years ago" (told as "for 4 years"): MRR@10 0.600
# -> 0.599.
_ECHOED = (
    _CLOCK_AGO, _PAST_CLOCK, _RELATIVE_DAY, _WEEKDAY, _WEEKEND, _LAST_MONTH_OR_YEAR, _BEFORE_LAST, _AGO, _PAST, _THIS,
)
_LONG_COUNT = re.compile(rf"\b{_COUNT}\s+(?:week|month|year)s?\b")
# A question about the past: "what happened", "what did we do", "where was I".
_PAST_TENSE = re.compile(r"\b(?:did|didn't|happened|was|wasn't|were|weren't|went|had)\b")


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
