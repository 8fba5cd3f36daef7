"""Extractive episode summaries (pure).

A summary is a handful of representative sentences quoted from the episode, in
the order they happened, under a bounded length: sentences whose words recur
across the episode's events score high, sentences that repeat what is already
chosen score low. It is never a concatenation of everything.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from .lexical import STOPWORDS, tokenize

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
MIN_WORDS = 3


@dataclass(frozen=True, slots=True)
class Extract:
    text: str
    quoted: tuple[int, ...]  # indices of the source texts a sentence was taken from


def split_sentences(text: str) -> list[str]:
    return [part.strip() for part in _SENTENCE_END.split(text) if part.strip()]


def extractive_summary(
    texts: Sequence[str], header: str = "", max_chars: int = 600, max_sentences: int = 5
) -> Extract:
    """Pick representative sentences of ``texts`` (one episode, in time order).

    >>> extractive_summary(["Deploy v2 started.", "Migrations ran fine.", "Deploy v2 done."],
    ...                    header="deploy v2: ", max_sentences=2).text
    'deploy v2: Deploy v2 started. Migrations ran fine.'
    """
    if max_chars < 20 or max_sentences < 1:
        raise ValueError("max_chars must be >= 20 and max_sentences >= 1")
    sentences: list[tuple[int, int, str, set[str]]] = []  # (source, position, text, words)
    for source, text in enumerate(texts):
        for sentence in split_sentences(text):
            words = {w for w in tokenize(sentence) if w not in STOPWORDS}
            sentences.append((source, len(sentences), sentence, words))
    # Episode-level word weights: words found in many events are what it is about.
    spread: Counter[str] = Counter()
    for words in ({w for w in tokenize(t) if w not in STOPWORDS} for t in texts):
        spread.update(words)
    weight = {word: math.log1p(count) for word, count in spread.items()}

    budget = max_chars - len(header)
    chosen: list[tuple[int, int, str]] = []
    covered: set[str] = set()
    pool = [s for s in sentences if len(s[3]) >= MIN_WORDS] or sentences
    def gain(item: tuple[int, int, str, set[str]], covered: set[str]) -> float:
        fresh = item[3] - covered
        return sum(weight.get(w, 0.0) for w in fresh) / math.sqrt(len(item[3]) + 1)

    while pool and len(chosen) < max_sentences:
        best = max(pool, key=lambda item: (gain(item, covered), -item[1]))
        pool.remove(best)
        used = sum(len(text) + 1 for _, _, text in chosen)
        if gain(best, covered) <= 0:
            break
        if used + len(best[2]) > budget:
            if not chosen:
                chosen.append((best[0], best[1], _cut(best[2], budget)))
            continue
        chosen.append((best[0], best[1], best[2]))
        covered |= best[3]
    chosen.sort(key=lambda item: item[1])
    body = " ".join(text for _, _, text in chosen)
    return Extract(text=(header + body)[:max_chars], quoted=tuple(sorted({s for s, _, _ in chosen})))


def without_quotes_of(summary: str, forgotten: str) -> str:
    """``summary`` with every sentence quoted from ``forgotten`` taken out: whole
    sentences only, so forgetting "ok" leaves "Booked" and "token" intact. A quote
    cut short (``…``, or the summary's length limit) goes too.

    >>> without_quotes_of("ops: Deploy started. Password is hunter2. Deploy done.", "Password is hunter2.")
    'ops: Deploy started. Deploy done.'
    """
    head, colon, body = summary.partition("): ")
    head, body = (head + colon, body) if colon else ("", summary)
    gone = split_sentences(forgotten)
    pieces = [piece.strip() for piece in _PIECE_END.split(body) if piece.strip()]
    kept = [
        _without_leading(piece, gone) for position, piece in enumerate(pieces)
        if not _quoted_from(piece, gone, last=position == len(pieces) - 1)
    ]
    if kept == pieces:
        return summary
    if not any(ch.isalnum() for piece in kept for ch in piece):
        return "(the events this summary quoted were forgotten)"
    return head + " ".join(kept)


# Where a summary's quoted sentences meet: after a sentence's end or a cut-short "…".
_PIECE_END = re.compile(r"(?<=[.!?…])\s+|\n+")


def _without_leading(piece: str, sentences: Sequence[str]) -> str:
    """``piece`` without the quoted sentences it starts with: a quote with no final
    stop ("sounds good") runs into the next one when the summary joins them."""
    for sentence in sentences:
        if piece.startswith(sentence + " "):
            return _without_leading(piece[len(sentence) + 1:], sentences)
    return piece


def _quoted_from(piece: str, sentences: Sequence[str], last: bool) -> bool:
    """``piece`` is one of ``sentences``, or the start of one cut short: by ``_cut``
    (ending "…") or, as the summary's last piece, by its length limit."""
    if piece in sentences:
        return True
    cut = piece.endswith("…") or (last and not piece.endswith((".", "!", "?")))
    stem = piece.removesuffix("…").rstrip()
    return cut and bool(stem) and any(sentence.startswith(stem) for sentence in sentences)


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[: max(limit - 1, 1)].rsplit(" ", 1)[0]
    return cut + "…"
