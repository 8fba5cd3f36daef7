"""Whether a text says that something changed: the reading behind ranking a change
above what it changed (``results.changed_after``).

``results.newer_first`` ranks a fact's older value below its newer one when both read
as "<subject> is <value>" (``dedup.fact_key``). Most corrections are not written so:
"Jane is vegetarian." then "Jane started eating fish again; she is pescatarian now";
"Lena lives in Berlin." then "Lena moved to Lisbon in October." The newer text says
a change ("now", "moved", "no longer"), and the two mean nearly the same thing. That
is enough to order two results, and too little to supersede anything at sleep.
"""

from __future__ import annotations

import re

from .dedup import CHANGE_VERBS, is_question
from .lexical import tokenize

_CHANGE = re.compile(
    r"\b(?:(?P<state>now|nowadays|no\s+longer|any\s?more|instead|these\s+days)"
    rf"|(?P<done>{CHANGE_VERBS}|replaced|started|stopped|quit|left|became|updated))\b",
    re.IGNORECASE,
)
# "Now" after these looks back: "until now", "up to now", "just now", "by now".
_LOOKING_BACK = frozenset("until till to just by".split())
# Among the words before a verb of change, these say it is not done, or not yet:
# "has not moved", "will be switched", "if we upgraded", "plans to".
_NOT_DONE = frozenset(
    """not never no didn't hasn't haven't hadn't wasn't weren't won't wouldn't will would shall should could
    can may might must to if unless whether""".split()
)
_BEFORE_VERB = 3  # words looked at before a verb of change
# A sentence ends at a mark followed by more text, but not after a title or an
# initial: "Jane now sees Dr. Okafor", "J. Smith moved to Leeds".
_SENTENCE_END = re.compile(r"(?P<word>[\w'’-]*)[.!?]+[\"')\]]*\s+\S")
_ABBREVIATIONS = frozenset("dr mr mrs ms prof st jr sr mt vs etc eg ie no fig approx".split())
# Words by which a text speaks of whoever said it, or of the user its session serves.
# ("We" and "our" are a team's, shared.)
_SPEAKER = frozenset("i me my mine myself user".split())


def says_a_change(text: str) -> bool:
    """Whether ``text`` states, in one sentence, that something is otherwise than
    before: a state said to hold now or no longer, or a change said done. A question
    asks; a plan, a negated or conditional change says none. A turn of several
    sentences is talk ("Seven years now, and I've found my muses. Check out my
    pottery!"): its "now" and "started" are seldom what it states.

    >>> says_a_change("Lena moved to Lisbon in October."), says_a_change("She is pescatarian now.")
    (True, True)
    >>> says_a_change("We will be moved to the new office."), says_a_change("Have you moved yet?")
    (False, False)
    >>> says_a_change("I have lived here until now."), says_a_change("Ten years now. I love it here.")
    (False, False)
    """
    if _sentences_after_first(text) or is_question(text):  # the first stops early, the second reads to the end
        return False
    for match in _CHANGE.finditer(text):
        before = [word.lower() for word in text[max(0, match.start() - 80): match.start()].split()[-_BEFORE_VERB:]]
        if match["state"]:
            if match["state"].lower() != "now" or not before or before[-1] not in _LOOKING_BACK:
                return True
        elif _NOT_DONE.isdisjoint(before):
            return True
    return False


def _sentences_after_first(text: str) -> bool:
    return any(
        len(end["word"]) > 1 and end["word"].lower().replace(".", "") not in _ABBREVIATIONS
        for end in _SENTENCE_END.finditer(text.strip())
    )


def of_its_speaker(text: str) -> bool:
    """Whether ``text`` speaks of whoever said it: another session's or source's "I
    moved to Lisbon" is another person's.

    >>> of_its_speaker("I moved to Lisbon."), of_its_speaker("We moved the CI to GitHub Actions.")
    (True, False)
    """
    return not _SPEAKER.isdisjoint(tokenize(text))
