"""Whether a query asks what happened, and whether a memory tells it.

"How many festivals did I attend", "how many hours have I spent playing": a question
about what happened is answered by a memory that tells it ("I just got back from AFI
Fest", "Celeste took me 10 hours"), more often than by one on the same topic that
asks, plans or describes ("can you recommend some film festivals?"). Both are read
from the verbs, in English: a past tense after its subject, or a question's "did",
"was", "have ... spent".
"""

from __future__ import annotations

import re

# Past forms not made with "-ed".
_IRREGULAR = """went got saw bought took made met had did ran began wrote read won gave found spent sold paid
    left came became felt kept lost heard built brought caught chose drove ate fell flew forgot grew hung knew
    led lent rode rang sang sat slept spoke stood swam taught told thought threw understood woke wore""".split()
# Present forms that end in "-ed" ("I need", "we proceed").
_PRESENT_IN_ED = "need feed proceed succeed exceed bleed breed speed heed seed shed".split()
_PAST_VERB = rf"(?:(?!(?:{'|'.join(_PRESENT_IN_ED)})\b)[a-z]+ed|{'|'.join(_IRREGULAR)})"
# "I went", "we've finally moved", "Caroline recently joined", "she had been".
_TELLS = re.compile(
    r"\b(?:[Ii]|[Ww]e|[Hh]e|[Ss]he|[Tt]hey|[A-Z][a-z]+)(?:'ve|\s+have|\s+has|\s+had)?"
    r"(?:\s+(?:[a-z]+ly|just|also|finally|already|actually|even|once|then|never|first))?"
    rf"\s+(?:{_PAST_VERB}|been)\b"
)
# "What did we decide", "where was I", "what happened".
_PAST_QUESTION = re.compile(r"\b(?:did|didn't|happened|was|wasn't|were|weren't|went|had)\b", re.IGNORECASE)
# "How many hours have I spent", "has the team ever shipped": up to three words between.
_PERFECT = re.compile(rf"\b(?:have|has|had|'ve)\s+(?:\w+\s+){{0,3}}(?:{_PAST_VERB}|been)\b", re.IGNORECASE)
# Past tenses are looked for this far into a text: a recall reads the texts of its
# best candidates, and one of them may be a 5 MB document.
_READ_CHARS = 20_000


def in_the_past_tense(query: str) -> bool:
    """Whether ``query`` asks in the simple past ("what did we do", "where was it").

    >>> in_the_past_tense("what happened at Christmas"), in_the_past_tense("what do I have on Monday")
    (True, False)
    """
    return _PAST_QUESTION.search(query) is not None


def asks_what_happened(query: str) -> bool:
    """Whether ``query`` asks about something that happened: in the simple past, the
    present perfect ("how many hours have I spent"), or telling it itself ("the
    restaurant I went to").

    >>> asks_what_happened("How many hours have I spent playing games?")
    True
    >>> asks_what_happened("What is my current highest score?")
    False
    """
    return in_the_past_tense(query) or _PERFECT.search(query) is not None or tells_what_happened(query)


def tells_what_happened(text: str) -> bool:
    """Whether ``text`` tells of something that happened: someone (a pronoun or a
    name) and a verb in the past ("I attended", "we've shipped", "Caroline just went").

    >>> tells_what_happened("I recently attended a lecture on street art.")
    True
    >>> tells_what_happened("Can you recommend some art events? I need ideas.")
    False
    """
    return _TELLS.search(text, 0, _READ_CHARS) is not None
