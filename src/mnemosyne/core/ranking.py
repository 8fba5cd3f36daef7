"""Hybrid ranking: fuse per-field lexical scores with semantic similarity, then adjust.

Weighted fusion of normalised scores, not reciprocal rank fusion: measured on
LoCoMo, RRF (k=60) fell below BM25 alone, because it throws away how far ahead the
best lexical hit is. Each signal is scaled to 0..1 for this query (BM25 divided by
the best score, similarities stretched between the lowest and best candidate), so
weights mean the same thing whatever the corpus size. Importance, recency, a match
with a time the query mentions, and past use then nudge the fused relevance.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise

from .temporal import Window

DAY = 86_400.0


@dataclass(frozen=True, slots=True)
class Weights:
    content: float = 0.5          # BM25 of the memory's own text (a short memory)
    context: float = 0.6          # BM25 of its episode window (neighbours included)
    # A long memory says what it means by itself; a short one ("yes, the blue one")
    # lives in its neighbours. From short_chars to long_chars of content, the content
    # and context weights move to these.
    long_content: float = 1.0
    long_context: float = 0.0
    short_chars: int = 300
    long_chars: int = 800
    source: float = 0.5           # the query names the memory's source (a speaker, a tool)
    dense: float = 0.5            # cosine similarity of the embeddings
    dense_window: float = 0.2     # cosine to the mean embedding of the memory and its neighbours
    # A memory found by meaning alone is a result at this cosine; below it, only the
    # closest of all, and only where it stands clear of the next (by standout_gap,
    # above standout_floor). A question and its answer in other words often score
    # 0.15-0.3 with the bundled model, and stand out; the closest of many unrelated
    # texts scores as much, but among others as close (bench/paraphrase.py).
    dense_floor: float = 0.3
    # A memory found by its neighbours' words alone, and not close by meaning itself,
    # is a result only if its episode window (itself and its neighbours) is at least
    # this close in meaning: below, the window is a run of unrelated memories stored
    # together. Measured (``bench/paraphrase.py``): other memories returned per
    # question 0.87 → 0.53, results per question no memory answers 0.95 → 0.50;
    # LoCoMo and LongMemEval unchanged (0.3 cost LoCoMo temporal R@10 0.013).
    context_window_floor: float = 0.2
    # Nor is it a result if it means nothing like its neighbours (cosine to the mean
    # of their vectors below this): the window holds an answer stored beside it, not
    # its conversation. With the bundled model, 99% of LongMemEval's turns score 0.13
    # or more with theirs (LoCoMo's, 0.26); of thirty unrelated facts saved in one
    # batch, nine in ten score under 0.16. Measured (``bench/paraphrase.py``): other
    # memories returned per question 0.57 → 0.40; LoCoMo and LongMemEval unchanged.
    coherence_floor: float = 0.15
    standout_floor: float = 0.25
    standout_gap: float = 0.05
    # A memory of the time a query names that asks about nothing else ("what happened
    # yesterday"): that it is of that time is what it has to match.
    listed: float = 1.0
    # A memory of the source a query names that asks about nothing else ("what did
    # ci-bot say"): being that source's is what it has to match.
    named_source: float = 1.0
    episode_match: float = 0.2    # how much of the query the event's whole episode matches
    episode: float = 0.3          # share of the best score among events of the same episode
    episode_gap_s: float = 3600.0 # events further apart than this are different episodes
    importance: float = 0.2       # multiplier span for importance 0..1
    recency: float = 0.05         # bonus for fresh memories, halving every half-life
    recency_half_life_days: float = 30.0
    time_match: float = 0.5       # bonus when created in the span the query names
    # In its place when the query asks for the latest state of something ("the latest
    # on the migration", "what's the next step") and names no other time: of the
    # recent time (``core/temporal.py``), a match at half the relevance of an older
    # one is the answer.
    latest_match: float = 1.0
    access: float = 0.02          # per log-unit of past recalls
    # Multiplier for a turn of the chat role a query's pronouns leave out, where they
    # point at the other alone ("how many games have I played": the assistant's
    # turns). The assistant's replies take up the user's words and topic, but the
    # user's own facts are in what the user said. Measured (``bench/retrieval.py``):
    # LongMemEval turn recall 0.867 → 0.888 at 0.5 to 0.8 alike; LoCoMo, whose
    # speakers are named, unchanged.
    other_role: float = 0.7
    # Multiplier for a result that tells what happened ("I just got back from AFI
    # Fest"), where the query asks it ("how many festivals did I attend"): among the
    # turns of a topic, those that ask or plan ("can you recommend some festivals?")
    # answer less (``core/past_tense.py``). Measured (``bench/retrieval.py``):
    # LongMemEval turn recall 0.888 → 0.918 (0.908 at 1.1 and 1.15, 0.918 at 1.25);
    # LoCoMo R@10 0.807 → 0.810 and MRR@10 0.605 → 0.619.
    told: float = 1.2
    # Multiplier for a value a newer one replaced (seen on request): below the newer
    # one when both match alike, however much more important or used it was. Before
    # sleep, an older value among the results takes it below the newer one's score
    # (``results.newer_first``).
    superseded: float = 0.75
    # Two results this close in meaning, the newer saying a change ("Lena lives in
    # Berlin.", "Lena moved to Lisbon in October.", 0.64 with the bundled model): the
    # newer takes the older's place (``results.changed_after``). With the bundled
    # model, 16 of 19 such pairs scored 0.6 or more, and 2 of 24 changes of something
    # else about the same person or service ("Jane is vegetarian.", "Jane moved to
    # Bristol.") (``tests/test_changes.py``).
    changed_close: float = 0.6
    # A result that reads almost as one ranked above it (cosine ``alike`` or more:
    # "Opened src/api/user.py. (step 10)", "... (step 35)", 0.98 with the bundled
    # model) tells a reader little more: its score is multiplied by ``alike_factor``
    # for each such one above (``results.fewer_alike``). Values read apart stay
    # apart: "We target Python 3.11" and "3.12" score 0.93.
    alike: float = 0.95
    alike_factor: float = 0.7


@dataclass(frozen=True, slots=True)
class Candidate:
    """What ranking needs to know about a memory besides its match scores."""

    importance: float
    created_at: float
    access_count: int = 0
    session_id: str = ""
    source_match: float = 0.0     # 1.0 when the query names this memory's source
    length: int = 0               # characters of content
    superseded: bool = False      # sleep found a newer value of the same fact
    other_role: bool = False      # a turn of the chat role the query's pronouns leave out


@dataclass(frozen=True, slots=True)
class Ranked:
    key: int
    score: float
    components: dict[str, float]
    copies: tuple[int, ...] = ()  # candidates of the same text ranked below it, left out


def normalise(hits: Sequence[tuple[int, float]]) -> dict[int, float]:
    """Scores divided by the best one (all in 0..1); empty or non-positive → empty."""
    best = max((score for _, score in hits), default=0.0)
    if best <= 0:
        return {}
    return {key: max(score, 0.0) / best for key, score in hits}


# Which nearest neighbour by meaning scores what "not about this" does: deep enough
# to be past what a query is about in a long history, and the same whatever top_k a
# recall asks for. Measured (``bench/retrieval.py``) against the 50th: LongMemEval
# turn recall 0.827 → 0.847, LoCoMo R@10 0.795 → 0.797 and MRR@10 0.591 → 0.596.
FIELD_RANK = 250


def above_the_field(hits: Sequence[tuple[int, float]], field: float | None = None) -> dict[int, float]:
    """Similarities rescaled from what the field scores (0; by default the lowest
    candidate's) to the best one's (1); those below the field are 0.

    Cosine similarities crowd into a narrow band (unrelated texts are far from 0), so
    dividing by the best alone leaves even the last of the nearest neighbours close
    to 1. A deep nearest neighbour is what "not about this" scores for this query
    and corpus, whatever the model. Measured with MiniLM (``bench/retrieval.py``)
    against dividing by the best: LoCoMo R@10 0.793 → 0.795 and category 5 0.757 →
    0.829; LongMemEval turn recall 0.837 → 0.847.
    """
    if not hits:
        return {}
    best = max(score for _, score in hits)
    lowest = min(score for _, score in hits) if field is None else field
    if best <= lowest:  # one candidate, or all alike: none stands above another
        return {key: 1.0 for key, _ in hits} if best > 0 else {}
    return {key: max(0.0, score - lowest) / (best - lowest) for key, score in hits}


def fuse(
    lexical: Mapping[str, Sequence[tuple[int, float]]],
    dense: Sequence[tuple[int, float]],
    candidates: Mapping[int, Candidate],
    now: float,
    window: Window | None = None,
    weights: Weights = Weights(),
    dense_window: Sequence[tuple[int, float]] = (),
    stretch: bool = True,
    field: float | None = None,
    limit: int | None = None,
    listed: Mapping[int, float] | None = None,
    named_source: Collection[int] = (),
    same_text: Mapping[int, int] | None = None,
    explain: bool = True,
    coherence: Mapping[int, float] | None = None,
) -> list[Ranked]:
    """Rank every candidate (or the best ``limit``), best first. Keys missing from
    ``candidates`` are skipped. ``listed`` maps the candidates found in the span of time
    a query names that asks about nothing else to how well they are of that time:
    that is their match. ``named_source`` holds those found among the memories of the
    sources a query names that asks about nothing else (besides a time): they match
    by being theirs. ``same_text`` maps each candidate that has copies among the
    others to one key of their text: only the best ranked copy is returned (and
    counts towards ``limit``), the others in its ``copies``. ``explain=False``
    leaves each result's ``components`` empty.

    ``dense_window`` holds each candidate's similarity to its episode window of
    embeddings (itself and its neighbours), the semantic side of the context field.
    ``stretch``: the vector search found as many neighbours as it was asked for, so
    similarities are stretched (``above_the_field``), from ``field`` if given (the
    similarity of the ``FIELD_RANK``-th neighbour; window similarities from the
    lowest candidate's, which moves with how many candidates a recall gathers, but
    stretched from the field they found less in a large memory: ``bench/scale.py``
    with the local model, turn recall@10 0.527 → 0.513). Fewer means it saw every
    memory it may return: the lowest of a handful is no stranger to the query, and
    they are divided by the best, as BM25 is. ``coherence`` holds each candidate's
    similarity to its neighbours' embeddings (those without any, left out).
    """
    # Every field is explained, those a query did not search (a listing's) as 0.
    signals = {"content": {}, "context": {}, **{name: normalise(hits) for name, hits in lexical.items()}}
    similar = [(key, max(score, 0.0)) for key, score in dense]
    similar_window = [(key, max(score, 0.0)) for key, score in dense_window]
    if stretch:
        floor = None if field is None else max(field, 0.0)  # scores below 0 are read as 0
        signals["dense"], signals["dense_window"] = above_the_field(similar, floor), above_the_field(similar_window)
    else:
        signals["dense"], signals["dense_window"] = normalise(similar), normalise(similar_window)
    # A listing's memories (of a time, of a source) are found by what they are.
    listing = set(listed or ()) | set(named_source)
    # Nearest neighbours always exist; a memory found by meaning alone must be close,
    # or stand out as the closest. One found by its neighbours' words alone must mean
    # something close with them.
    too_far = {key for key, score in dense if score < weights.dense_floor} - {
        key for hits in lexical.values() for key, _ in hits
    } - listing - _standing_out(dense, weights)
    too_far |= _by_unrelated_neighbours(lexical, dense, dense_window, coherence or {}, weights) - listing
    # A candidate no signal found (one of a time's memories without a vector, say)
    # is no result unless the query lists it.
    found = {key for hits in lexical.values() for key, _ in hits} | {key for key, _ in dense} | listing
    signals["source"] = {key: c.source_match for key, c in candidates.items() if c.source_match}
    signals["listed"] = dict(listed or {})
    signals["named_source"] = dict.fromkeys(named_source, 1.0)
    # An answer often sits in the same episode as the turn that matches best ("what
    # did she adopt?" ... "a puppy!"). Two signals carry that: how much lexical
    # evidence the whole episode holds, and (below) the episode's best score.
    content, context = signals.get("content", {}), signals.get("context", {})
    lexical_evidence = {key: content.get(key, 0.0) + context.get(key, 0.0) for key in candidates}
    episodes = _episodes(candidates, weights.episode_gap_s)
    episode_evidence = _per_episode(episodes, lexical_evidence, sum)
    most_evidence = max(episode_evidence.values(), default=0.0) or 1.0
    signals["episode_match"] = {key: episode_evidence[key] / most_evidence for key in candidates}
    relevance = _relevance(signals, candidates, weights)
    best_overall = max(relevance.values(), default=0.0) or 1.0
    episode_best = _per_episode(episodes, relevance, max)
    episode = {key: weights.episode * best / best_overall for key, best in episode_best.items()}
    scores = {}
    for key, candidate in candidates.items():
        # Found by meaning or by its neighbours alone, and not close: not a result. (A
        # candidate that a signal found but scored 0, the lowest similarity, is ranked,
        # not dropped.)
        if key in too_far or key not in found:
            continue
        factors = _factors(candidate, now, window, weights, key in listing)
        scores[key] = (relevance[key] + episode[key]) * math.prod(factors)
    # Equal scores (those of a listing's memories that nothing else matched): newest first.
    order = sorted(scores, key=lambda key: (-scores[key], -candidates[key].created_at, key))
    best = _distinct(order, same_text or {}, limit)

    def components(key: int, copies: list[int]) -> dict[str, float]:
        return {
            **{field: values.get(key, 0.0) for field, values in signals.items()},
            "relevance": relevance[key],
            "episode": episode[key],
            **dict(zip(_FACTORS, _factors(candidates[key], now, window, weights, key in listing), strict=True)),
            "copies": float(len(copies)),
            "replaces": 1.0,  # raised to the place of an older result it changes (``results.changed_after``)
            "alike": 1.0,  # lowered below a result above it that reads almost the same (``results.fewer_alike``)
            "told": 1.0,  # raised as telling what happened, which the query asks (``results.told_first``)
            "score": scores[key],
        }

    # Explaining is for the few returned, not every candidate.
    return [Ranked(key, scores[key], components(key, copies) if explain else {}, tuple(copies))
            for key, copies in best.items()]


def _distinct(order: Sequence[int], same_text: Mapping[int, int], limit: int | None) -> dict[int, list[int]]:
    """The first ``limit`` keys of ``order`` that copy none before them, each with the
    keys of its copies (all of them, those past ``limit`` too)."""
    kept: dict[int, list[int]] = {}
    first: dict[int, int] = {}  # a text -> its kept key
    for key in order:
        text = same_text.get(key)
        if text is not None and text in first:
            kept[first[text]].append(key)
        elif limit is None or len(kept) < limit:
            kept[key] = []
            if text is not None:
                first[text] = key
        elif not first:  # full, and no copy to count
            break
    return kept


# What multiplies a candidate's relevance, in ``explain``'s words.
_FACTORS = ("importance", "recency", "time_match", "access", "superseded", "other_role")


def _factors(
    candidate: Candidate, now: float, window: Window | None, weights: Weights, listed: bool = False
) -> tuple[float, float, float, float, float, float]:
    """The ``_FACTORS`` of a candidate: its importance, freshness, a match with the
    time the query names, past use, whether a newer value replaced it (only a
    recall that asks for such values sees one: it ranks below the value now true),
    and whether it is a turn of the chat role the query's pronouns leave out.

    A ``listed`` memory (of a time or a source a query asks about and nothing else)
    is ordered by its time itself, importance, then newest first: neither freshness
    nor past use counts, or what one listing returned would head every later one."""
    age_days = max(0.0, now - candidate.created_at) / DAY
    return (
        1 + weights.importance * (candidate.importance - 0.5),
        1.0 if listed else 1 + weights.recency * 0.5 ** (age_days / weights.recency_half_life_days),
        1 + weights.time_match * _in_window(candidate.created_at, window),
        1.0 if listed else 1 + weights.access * math.log1p(candidate.access_count),
        weights.superseded if candidate.superseded else 1.0,
        weights.other_role if candidate.other_role else 1.0,
    )


# Fields whose weight moves with the memory's length (see ``Weights``).
_BY_LENGTH = frozenset({"content", "context"})


def _standing_out(dense: Sequence[tuple[int, float]], weights: Weights) -> set[int]:
    """The closest memory by meaning, if it stands clear of the next one."""
    ranked = sorted(dense, key=lambda hit: -hit[1])[:2]
    if not ranked:
        return set()
    (key, best), runner_up = ranked[0], (ranked[1][1] if len(ranked) > 1 else 0.0)
    return {key} if best >= weights.standout_floor and best - runner_up >= weights.standout_gap else set()


def _by_unrelated_neighbours(
    lexical: Mapping[str, Sequence[tuple[int, float]]], dense: Sequence[tuple[int, float]],
    dense_window: Sequence[tuple[int, float]], coherence: Mapping[int, float], weights: Weights,
) -> set[int]:
    """The memories found by their neighbours' words alone (their own text holds no
    query word, and they are not close by meaning) that are unrelated to those
    neighbours: their episode window means nothing close to the query, or they mean
    nothing like their neighbours (facts saved in one batch: "The font is Inter."
    beside "I paid 1200 dollars for the new MacBook."), whose words then say nothing
    of them. Only those with both similarities known: without vectors, the window's
    words are all there is."""
    own_words = {key for key, _ in lexical.get("content", ())}
    similarity, window = dict(dense), dict(dense_window)
    return {
        key for key, _ in lexical.get("context", ())
        if key not in own_words and key in similarity and key in window
        and similarity[key] < weights.dense_floor
        and (window[key] < weights.context_window_floor
             or coherence.get(key, weights.coherence_floor) < weights.coherence_floor)
    }


def _relevance(
    signals: Mapping[str, Mapping[int, float]], candidates: Mapping[int, Candidate], weights: Weights
) -> dict[int, float]:
    """Each candidate's weighted sum of the signals: content and context weights set
    by the memory's length, the others fixed. Signals are sparse, so only the values
    present are visited."""
    span = max(1, weights.long_chars - weights.short_chars)
    longness = {
        key: min(1.0, max(0.0, (c.length - weights.short_chars) / span)) for key, c in candidates.items()
    }
    total = dict.fromkeys(candidates, 0.0)
    for field, values in signals.items():
        if field in _BY_LENGTH:
            short, long = (weights.content, weights.long_content) if field == "content" else (
                weights.context, weights.long_context)
            for key, value in values.items():
                if key in total:
                    total[key] += (short + longness[key] * (long - short)) * value
        else:
            weight = getattr(weights, field)
            for key, value in values.items():
                if key in total:
                    total[key] += weight * value
    return total


def _episodes(candidates: Mapping[int, Candidate], gap: float) -> list[list[int]]:
    """Candidates grouped by episode: same session, no time gap larger than ``gap``
    between consecutive ones."""
    by_session: dict[str, list[int]] = {}
    for key, candidate in candidates.items():
        by_session.setdefault(candidate.session_id, []).append(key)
    episodes: list[list[int]] = []
    for keys in by_session.values():
        keys.sort(key=lambda k: candidates[k].created_at)
        episodes.append([keys[0]])
        for previous, key in pairwise(keys):
            if candidates[key].created_at - candidates[previous].created_at > gap:
                episodes.append([])
            episodes[-1].append(key)
    return episodes


def _per_episode(
    episodes: list[list[int]], values: Mapping[int, float], combine: Callable[[Iterable[float]], float]
) -> dict[int, float]:
    """For each candidate, ``combine`` of ``values`` over the candidates of its episode."""
    result: dict[int, float] = {}
    for episode in episodes:
        if len(episode) == 1:  # the common case, without the generators
            result[episode[0]] = combine((values[episode[0]],))
            continue
        total = combine(values[k] for k in episode)
        result.update((k, total) for k in episode)
    return result


def _in_window(created_at: float, window: Window | None) -> float:
    return 1.0 if window is not None and window.start <= created_at < window.end else 0.0
