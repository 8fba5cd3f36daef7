"""Extractive episode summaries (pure).

A summary is a handful of representative sentences quoted from the episode, in
the order they happened, under a bounded length: sentences whose words recur
across the episode's events score high, sentences that repeat what is already
chosen score low. It is never a concatenation of everything. Each quote ends its
own sentence, so no run of words across two of them reads as a quote.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone

from .lexical import STOPWORDS, tokenize

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
MIN_WORDS = 3
_ENDED = re.compile(r"[.!?]\Z")


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
    # A line ending with a colon announces what follows ("Traceback (most recent call
    # last):", "Steps:"): quoted alone it says nothing, and reads "...last):." with a stop.
    pool = [s for s in sentences if len(s[3]) >= MIN_WORDS and not s[2].endswith(":")] or sentences
    def gain(item: tuple[int, int, str, set[str]], covered: set[str]) -> float:
        fresh = item[3] - covered
        # fsum: exact whatever the order of the set, which the hash seed sets; a plain
        # sum could differ in its last bit between runs and break ties otherwise.
        return math.fsum(weight.get(w, 0.0) for w in fresh) / math.sqrt(len(item[3]) + 1)

    while pool and len(chosen) < max_sentences:
        used = sum(len(text) + 1 for _, _, text in chosen)
        if chosen:
            # A sentence that does not fit now never will (what is used only grows):
            # out of the pool, not passed over one round at a time, each round scoring
            # the whole pool again (23 s for one episode of 4,000 events). Only the
            # first quote is ever cut to fit.
            pool = [item for item in pool if used + len(_quoted(item[2])) <= budget]
            if not pool:
                break
        best = max(pool, key=lambda item: (gain(item, covered), -item[1]))
        pool.remove(best)
        if gain(best, covered) <= 0:
            break
        # Each quote ends its own sentence: one without a final stop would run into the
        # next, and words across the two ("...then the deploy" "Failed checks...")
        # could read as a quote of a third event ("The deploy failed").
        sentence = _quoted(best[2])
        if used + len(sentence) > budget:  # nothing chosen yet: cut to fit
            chosen.append((best[0], best[1], _cut(best[2], budget)))
            continue
        chosen.append((best[0], best[1], sentence))
        covered |= best[3]
    chosen.sort(key=lambda item: item[1])
    body = " ".join(text for _, _, text in chosen)
    return Extract(text=(header + body)[:max_chars], quoted=tuple(sorted({s for s, _, _ in chosen})))


def _quoted(sentence: str) -> str:
    """``sentence`` as a summary quotes it: ending its own sentence."""
    return sentence if _ENDED.search(sentence) else sentence + "."


def _as_quoted(sentences: Sequence[str]) -> list[str]:
    """``sentences`` as summaries may quote them: as they are (those made before each
    quote got its own stop), and as :func:`_quoted` writes them."""
    return [form for sentence in sentences for form in dict.fromkeys((sentence, _quoted(sentence)))]


def summary_header(name: str, events: int, start: float, end: float) -> str:
    """What a summary's text starts with: what it condenses, how much and when (UTC)."""
    return f"Summary of {name} ({events} events, {_minute(start)} to {_minute(end)}): "


def _minute(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%d %H:%M")


# summary_header's shape. Non-greedy up to the dated part, so an episode label holding
# "): " stays in the header.
_HEADER = re.compile(r"Summary of (?P<name>.*?) \(\d+ events, [\d-]+ [\d:]+ to [\d-]+ [\d:]+\): ", re.DOTALL)
# What a summary says once every quote it had is gone.
NOTHING_LEFT = "(the events this summary quoted were forgotten)"


def split_header(summary: str) -> tuple[str, str]:
    """``summary`` as (its header, what follows); the header is "" if it has none."""
    match = _HEADER.match(summary)
    return (summary[: match.end()], summary[match.end():]) if match else ("", summary)


def without_quotes_of(summary: str, forgotten: str, others: Sequence[str] = ()) -> str:
    """``summary`` with every sentence quoted from ``forgotten`` taken out: whole
    sentences only, so forgetting "ok" leaves "Booked" and "token" intact. A quote
    cut short (``…``, or the summary's length limit) goes too. ``others`` are the
    texts of the summary's other sources: knowing their sentences, a quote of
    ``forgotten`` is found after them too, where quotes without a final stop ran
    together into one sentence ("Started the rollout Paged on-call hunter2", as
    summaries made before each quote got its own stop read).

    >>> without_quotes_of("ops: Deploy started. Password is hunter2. Deploy done.", "Password is hunter2.")
    'ops: Deploy started. Deploy done.'
    """
    header, body = split_header(summary)
    gone = _as_quoted(split_sentences(forgotten))
    kept_sentences = _as_quoted([sentence for text in others for sentence in split_sentences(text)])
    # A summariser may have reworded the text, or set it out as "- <sentence>": a
    # sentence holding a word that only the forgotten text has goes as well.
    own_words = set(tokenize(forgotten)) - STOPWORDS - {w for text in others for w in tokenize(text)}
    pieces = split_sentences(body)
    last = len(pieces) - 1
    kept = [rest for i, piece in enumerate(pieces)
            if (rest := _without_quotes(piece, gone, kept_sentences, i == last))
            and not own_words.intersection(tokenize(rest))]
    if kept == pieces:
        return summary
    if not any(ch.isalnum() for piece in kept for ch in piece):
        return NOTHING_LEFT
    return header + " ".join(kept)


def covering(summary: str, cleaned: str, events: Sequence[str], start: float, end: float,
             max_chars: int, max_sentences: int) -> str:
    """What ``summary`` says once one of its events is forgotten, ``cleaned`` being
    its text without that event's quotes (see :func:`without_quotes_of`): its header
    counts the ``events`` left (their texts in time order, from ``start`` to
    ``end``), and one left with no quote at all (a summariser's gist, cut whole for
    holding the forgotten event's words) quotes them afresh, as sleep does when a
    summariser fails. A summary without a header, or left with no event, says
    nothing more than ``cleaned``.

    >>> covering("Summary of episode (3 events, 2026-01-01 09:00 to 2026-01-01 09:02): Kickoff. Secret.",
    ...          "Summary of episode (3 events, 2026-01-01 09:00 to 2026-01-01 09:02): Kickoff.",
    ...          ["Kickoff."], 1767258000.0, 1767258000.0, 600, 5)
    'Summary of episode (1 events, 2026-01-01 09:00 to 2026-01-01 09:00): Kickoff.'
    """
    match = _HEADER.match(summary)
    if match is None or not events:
        return cleaned
    header = summary_header(match["name"], len(events), start, end)
    if cleaned == NOTHING_LEFT:
        return extractive_summary(events, header, max_chars, max_sentences).text
    return header + split_header(cleaned)[1]


def _without_quotes(piece: str, gone: Sequence[str], others: Sequence[str], last: bool) -> str:
    """What is left of ``piece`` (one sentence of a summary) once the quotes of
    ``gone`` are taken out. Joining can run quotes together: one with no final stop
    ("sounds good") into the next, or one cut short by ``_cut`` ("A long sentence
    th… Next one."). So the piece is read quote by quote, from the start, while
    its next words are a quote of ``gone`` (dropped) or of ``others`` (kept). As the
    summary's last piece, a quote may also be cut by its length limit, with no mark
    at all."""
    kept: list[str] = []
    rest = piece
    while rest:
        dropped, quoted = _leading_quote(rest, gone), _leading_quote(rest, others)
        # The longer quote is the one the summary holds: forgetting "Paged on-call"
        # leaves "Paged on-call twice about the disk" whole. A tie is a text another
        # source says too: it stays.
        if dropped is not None and (quoted is None or len(dropped[0]) > len(quoted[0])):
            rest = dropped[1]
        elif quoted is not None:
            kept.append(quoted[0])
            rest = quoted[1]
        else:
            break
    cut = rest.removesuffix("…")
    if (last or cut != rest) and cut and any(s.startswith(cut) for s in gone):
        rest = ""
    return " ".join([*kept, rest] if rest else kept)


def _leading_quote(text: str, sentences: Sequence[str]) -> tuple[str, str] | None:
    """``(quote, rest)`` if ``text`` starts with a whole quote of one of ``sentences``
    (the longest), or with one cut short by ``_cut``; None otherwise."""
    whole = [s for s in sentences if text == s or text.startswith(s + " ")]
    if whole:
        quote = max(whole, key=len)
        return quote, text[len(quote) + 1:]
    stem, mark, rest = text.partition("… ")
    if mark and len(stem) >= _CUT_AT_LEAST and any(
        s.startswith(stem) and s != stem + "…" for s in sentences
    ):
        return stem + "…", rest
    return None


# _cut shortens only a sentence longer than a summary's whole budget, so a quote
# cut short is long: a shorter "Well… " is a sentence's own pause, not a cut.
_CUT_AT_LEAST = 20


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[: max(limit - 1, 1)].rsplit(" ", 1)[0]
    return cut + "…"
