"""Turning free user text into a safe FTS5 query.

User text never reaches FTS5 syntax: it is split into word tokens, each token is
quoted, and the tokens are OR-ed so BM25 ranks by how many (and how rare) of them
a memory contains. Quotes, ``*``, ``-``, ``NEAR``, ``AND``, emoji and SQL fragments
are therefore just text.
"""

from __future__ import annotations

import re

# Letters and digits only: FTS5's unicode61 tokenizer also splits on "_" and on
# punctuation, so matching its notion of a token keeps query and index aligned.
_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)

STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been
    before being below between both but by can could did do does doing down during each
    few for from further had has have having he her here hers herself him himself his how
    i if in into is it its itself just me more most my myself no nor not now of off on
    once only or other our ours ourselves out over own same she should so some such than
    that the their theirs them themselves then there these they this those through to too
    under until up very was we were what when where which while who whom why will with
    would you your yours yourself yourselves""".split()
)


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens of ``text``, in order."""
    return [token.lower() for token in _TOKEN.findall(text)]


def query_terms(text: str) -> list[str]:
    """Distinct search terms: stopwords dropped unless nothing else is left."""
    tokens = list(dict.fromkeys(tokenize(text)))
    content = [token for token in tokens if token not in STOPWORDS]
    return content or tokens


def fts_query(text: str) -> str | None:
    """An FTS5 MATCH expression for ``text``, or None when it has no searchable words."""
    terms = query_terms(text)
    if not terms:
        return None
    return " OR ".join(f'"{term}"' for term in terms)
