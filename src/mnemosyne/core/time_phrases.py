"""Which of the times a query names relative to now are searched, and how.

"Any changes this month" is not about a month: a time relative to now says when,
not what about, so ``relative_times_apart`` takes it out of the words a query is
searched by. Some are searched instead as the phrase they are ("last weekend"),
which a memory telling of that time often echoes; others are not searched at all.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from .lexical import tokenize
from .time_words import (
    AGO,
    BEFORE_LAST,
    CLOCK_AGO,
    COUNT,
    LAST_CALENDAR_UNIT,
    PAST,
    PAST_CLOCK,
    RECENT,
    RELATIVE_DAY,
    THIS,
    WEEKDAY,
    WEEKEND,
    readable,
)

# The times relative to now that are no words of a query's (see
# ``relative_times_apart``): counts of days, hours or minutes back, "recently" and
# its like, "since".
_UNSEARCHED = (
    re.compile(rf"\b(?:{COUNT}\s+(?:day|hour|minute)s?\s+ago|(?:past|last)\s+{COUNT}\s+(?:day|hour|minute)s?)\b"),
    RECENT, re.compile(r"\bsince\b"),
)
# Those searched as the phrase they are, unless they count weeks, months or years
# (``_LONG_COUNT``: kept as words). Searching "4 years ago" as a phrase lost LoCoMo's
# "where did Caroline move from 4 years ago" (told as "for 4 years"): MRR@10 0.600
# -> 0.599.
_ECHOED = (
    CLOCK_AGO, PAST_CLOCK, RELATIVE_DAY, WEEKDAY, WEEKEND, LAST_CALENDAR_UNIT, BEFORE_LAST, AGO, PAST, THIS,
)
_LONG_COUNT = re.compile(rf"\b{COUNT}\s+(?:week|month|year)s?\b")


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
    text = readable(query)
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
