"""The words queries name times in, shared by the modules that read them.

Tables of month, weekday and holiday names, counts and units, and the regular
expressions that find a time's words in a query ("8 May, 2023", "last Friday
evening", "3 weeks ago", "next weekend", "recently"). Each is read on a query made
``readable`` first: lower case, plain apostrophes, and the verb "may" no month.
``temporal`` reads from them the time a query names, ``dates_ahead`` the dates
ahead it names, ``time_phrases`` which of them a memory may echo word for word.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

DAY = timedelta(days=1)

MONTH_NAMES = [  # each month's full name, then its short ones
    ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",),
    ("june", "jun"), ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"),
    ("october", "oct"), ("november", "nov"), ("december", "dec"),
]
MONTHS = {name: number for number, names in enumerate(MONTH_NAMES, start=1) for name in names}
_SHORT_MONTHS = [short for names in MONTH_NAMES for short in names[1:]]
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
# Not "sat" nor "sun": "on sun exposure" is no Sunday.
_SHORT_WEEKDAYS = {"mon": 0, "tue": 1, "tues": 1, "wed": 2, "thu": 3, "thur": 3, "thurs": 3, "fri": 4}
WEEKDAY_NUMBERS = {name: number for number, name in enumerate(_WEEKDAYS)} | _SHORT_WEEKDAYS
# Holidays on a fixed date. Movable ones (Easter, Thanksgiving, Mother's Day) fall on
# different days in different countries, so they are not guessed.
# Matched with the query's apostrophes dropped: "valentine's day" reads "valentines day".
HOLIDAYS = {"new years eve": (12, 31), "new years day": (1, 1), "valentines day": (2, 14),
            "halloween": (10, 31), "christmas eve": (12, 24), "christmas": (12, 25)}
COUNTS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
          "seven": 7, "eight": 8, "nine": 9, "ten": 10, "few": 3, "couple of": 2, "several": 4}
UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}
UNIT_SECONDS = {"minute": 60, "hour": 3600}

_MONTH = "(" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
# A count of something, in digits or words: "3", "a", "a few", "a couple of".
COUNT = r"(\d+|" + "|".join(sorted(COUNTS, key=len, reverse=True)) + ")"
_UNIT = r"(day|week|month|year)s?"
_YEAR_AFTER = r"(?:,\s*|\s+)(?:of\s+)?(\d{4})\b"  # "May 8 2023", "May 8, 2023", "May of 2023"
MONTH_DAY_YEAR = re.compile(rf"\b{_MONTH}(?:\s+{_DAY})?{_YEAR_AFTER}")
DAY_MONTH_YEAR = re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}{_YEAR_AFTER}")
ISO_DATE = re.compile(r"\b(\d{4})[-/](\d{1,2})[-/](\d{1,2})(?!\d)")  # also "2023-05-08T10:00"
HOLIDAY = re.compile(r"\b(" + "|".join(HOLIDAYS) + r")(?:,?\s+(\d{4}))?\b")
# A holiday as a query may write it, with or without its apostrophe.
HOLIDAY_WRITTEN = re.compile(
    r"\b(" + "|".join("'?".join(map(re.escape, name)) for name in HOLIDAYS) + r")(?:,?\s+(\d{4}))?\b"
)
MONTH_DAY = re.compile(rf"\b{_MONTH}\s+{_DAY}\b")
DAY_MONTH = re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}\b")
# A part of a day, from and to an hour of it (night runs into the next morning).
PARTS_OF_DAY = {"morning": (5, 12), "afternoon": (12, 18), "evening": (18, 24), "night": (18, 30)}
PART = r"(?:\s+(morning|afternoon|evening|night)\b)"
_WEEKDAY_NAMES = "|".join(sorted(WEEKDAY_NUMBERS, key=len, reverse=True))
_WEEKDAY_NAME = f"({_WEEKDAY_NAMES})\\b"
# "on Tuesday", "last Friday", "this Monday evening", and a bare weekday only with a
# part of the day ("Tuesday morning": "the Tuesday sync" is a name). "On Saturday
# mornings" is a habit, not a day.
WEEKDAY = re.compile(
    rf"\b(?:(on|last|this past|this)\s+{_WEEKDAY_NAME}{PART}?|{_WEEKDAY_NAME}{PART})"
    r"(?!\s+(?:mornings|afternoons|evenings|nights)\b)"
)
WEEKEND = re.compile(r"\b(last|this past|this|the)\s+weekend\b")
RELATIVE_DAY = re.compile(
    rf"\b(?:the\s+)?(?:day\s+before\s+)?yesterday\b{PART}?|\blast\s+night\b|\btoday\b{PART}?|\btonight\b"
    r"|\bthis\s+(?:morning|afternoon|evening)\b"
)
# The days ahead a query names relative to today: "tomorrow", "the day after
# tomorrow", "next week", "next weekend", "next Tuesday", "this weekend" and "this
# Friday" (when still ahead), "next month".
DAYS_AHEAD = re.compile(
    rf"\b(?:(?:the\s+)?day\s+after\s+tomorrow|tomorrow|(next|this(?:\s+coming)?)\s+(week|weekend|month|{_WEEKDAY_NAMES})\b)"
)
AGO = re.compile(rf"\b{COUNT}\s+{_UNIT}\s+ago\b")
PAST = re.compile(rf"\b(?:past|last)\s+(?:{COUNT}\s+)?{_UNIT}\b")
BEFORE_LAST = re.compile(r"\b(week|month|year)\s+before\s+last\b")
THIS = re.compile(r"\bthis\s+(week|month|year)\b")
# "in Jan's calendar" is a person's: a month is written out when it owns something.
# "in mid-April" and "in early May" are read as the whole month (spans are generous).
IN_MONTH = re.compile(
    rf"\b(in|during|last)\s+(?:(?:early|mid|late)[-\s]+)?(?!(?:{'|'.join(_SHORT_MONTHS)})'s\b){_MONTH}\b"
)
IN_YEAR = re.compile(r"\bin\s+((?:19|20)\d{2})\b(?![-/]\d)")  # not the year of "in 2026-13-01"
# "since yesterday", "since last Friday", "since Monday", "since March": from then until now.
SINCE = re.compile(r"\bsince\s+(.+)")
# "since" and what it reads as "in" or "on" ("since March", "since Monday", "since
# 2022"); the other times after it ("since last Friday") are taken out by their own.
SINCE_WORDS = re.compile(
    rf"\bsince(?:\s+(?:{_MONTH}|{_WEEKDAY_NAMES}|(?:19|20)\d{{2}})\b)?"
)
# "an hour ago", "30 minutes ago": around then, counted loosely. "The past hour",
# "the last 30 minutes": from then until now.
CLOCK_AGO = re.compile(rf"\b{COUNT}\s+(minute|hour)s?\s+ago\b")
# Not "last minute changes": "last" with a count, or "the last".
PAST_CLOCK = re.compile(rf"\b(?:past|the\s+last|last(?=\s+\d))\s+(?:{COUNT}\s+)?(minute|hour)s?\b")
# "may" is also a verb: "the 2 may conflict". Next to a bare number, a month is
# "May" with its capital, "on may 2", "2nd may", "2 of may" or one with a year.
_MODAL_MAY = re.compile(r"(?<!\b[oO]n )\b(?:\d{1,2}\s+may|may\s+\d{1,2})\b(?!,?\s*\d{4}\b)")
# Not "the last year" ("in the last year" is the past twelve months, read by PAST).
LAST_CALENDAR_UNIT = re.compile(r"(?<!\bthe )\blast\s+(week|month|year)\b")
# Words that ask for the latest state of something: "what's the latest on the
# migration", "the most recent deploy", "where did we leave off", "what were we
# doing", and of "what's the next step" or "what should I do next" the word "next"
# (the step is a topic). Not "from earliest to latest" (an order), nor "next week"
# (a time ahead).
LATEST = re.compile(
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
RECENT = re.compile(
    LATEST.pattern + r"|\brecent(?:ly)?\b|\blately\b|\bof\s+late\b|\bso\s+far\b|\blast\s+time\b"
)


def readable(query: str) -> str:
    """``query`` as the expressions read it: lower case, plain apostrophes, and the
    verb "may" no month."""
    return _MODAL_MAY.sub(lambda verb: verb.group().replace("may", "-"), query).lower().replace("\u2019", "'")


def midnight(now: datetime) -> datetime:
    """The start of ``now``'s calendar day, in its own time zone."""
    return now.replace(hour=0, minute=0, second=0, microsecond=0)
