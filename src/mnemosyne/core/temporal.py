"""Time named in a query: "in May 2023", "8 May, 2023", "3 weeks ago", "last week".

``time_window(query, now)`` returns the span a query points at, or None. Recall
favours memories created inside it and never hides the others ("what did we decide
last week" may be answered by an older memory). Spans are generous on purpose:
people say "in May" of something recorded on June 2nd.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

DAY = timedelta(days=1)
_MONTHS = {
    name: number
    for number, names in enumerate(
        [("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",),
         ("june", "jun"), ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"),
         ("october", "oct"), ("november", "nov"), ("december", "dec")],
        start=1,
    )
    for name in names
}
_COUNTS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
           "seven": 7, "eight": 8, "nine": 9, "ten": 10, "few": 3, "couple of": 2, "several": 4}
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}

_MONTH = "(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_COUNT = r"(\d+|" + "|".join(sorted(_COUNTS, key=len, reverse=True)) + ")"
_UNIT = r"(day|week|month|year)s?"
_MONTH_DAY_YEAR = re.compile(rf"\b{_MONTH}\s+(?:(\d{{1,2}})(?:st|nd|rd|th)?,?\s+)?(\d{{4}})\b")
_DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH},?\s+(\d{{4}})\b")
_IN_MONTH = re.compile(rf"\b(?:in|during|since)\s+{_MONTH}\b")
_AGO = re.compile(rf"\b{_COUNT}\s+{_UNIT}\s+ago\b")
_PAST = re.compile(rf"\b(?:past|last)\s+(?:{_COUNT}\s+)?{_UNIT}\b")
_IN_YEAR = re.compile(r"\bin\s+((?:19|20)\d{2})\b")


def time_window(query: str, now: datetime) -> tuple[datetime, datetime] | None:
    """The ``[start, end)`` span that ``query`` names, relative to ``now`` (aware)."""
    text = query.lower()
    today = now.astimezone(timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0)
    match = _MONTH_DAY_YEAR.search(text)
    if match:
        return _date_span(int(match.group(3)), _MONTHS[match.group(1)], match.group(2))
    match = _DAY_MONTH_YEAR.search(text)
    if match:
        return _date_span(int(match.group(3)), _MONTHS[match.group(2)], match.group(1))
    if "yesterday" in text:
        return today - DAY, today
    if re.search(r"\b(?:today|tonight|this morning)\b", text):
        return today, today + DAY
    match = _AGO.search(text)
    if match:
        days = _count(match.group(1)) * _UNIT_DAYS[match.group(2)]
        slack = timedelta(days=_UNIT_DAYS[match.group(2)] / 2 + 3)
        return today - timedelta(days=days) - slack, today - timedelta(days=days) + slack
    match = _PAST.search(text)
    if match:
        days = (_count(match.group(1)) if match.group(1) else 1) * _UNIT_DAYS[match.group(2)]
        return today - timedelta(days=days) - DAY, today + DAY
    if "this week" in text:
        return today - timedelta(days=today.weekday()), today + DAY
    match = _IN_MONTH.search(text)
    if match:
        month = _MONTHS[match.group(1)]
        return _date_span(today.year if month <= today.month else today.year - 1, month, None)
    match = _IN_YEAR.search(text)
    if match:
        year = int(match.group(1))
        return datetime(year, 1, 1, tzinfo=timezone.utc), datetime(year + 1, 1, 1, tzinfo=timezone.utc)
    return None


def _date_span(year: int, month: int, day: str | None) -> tuple[datetime, datetime] | None:
    try:
        if day:
            start = datetime(year, month, int(day), tzinfo=timezone.utc)
            # Things are told about after they happen, rarely before.
            return start - 7 * DAY, start + 14 * DAY
        start = datetime(year, month, 1, tzinfo=timezone.utc)
    except ValueError:  # "February 30, 2024": not a date, so no span
        return None
    return start, start + 45 * DAY


def _count(word: str) -> int:
    return int(word) if word.isdigit() else _COUNTS[word]
