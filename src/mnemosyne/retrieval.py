"""Recall's pipeline: gather lexical and semantic candidates, fuse, adjust, cut."""

from __future__ import annotations

import dataclasses
import functools
import math
import sqlite3
from collections.abc import Callable, Iterable, Mapping
from datetime import timezone, tzinfo

import numpy as np

from . import background
from .core import lexical, past_tense, results
from .core.changes import of_its_speaker, says_a_change
from .core.context import MAX_GAP_S, WINDOW
from .core.dates_ahead import dates_ahead
from .core.dedup import fact_key
from .core.ranking import FIELD_RANK, Candidate, Ranked, Weights, fuse
from .core.temporal import (
    HAPPENING,
    Window,
    asks_latest,
    asks_only_when,
    asks_recent,
    window_seconds,
    without_times,
)
from .core.time_phrases import Worded, relative_times_apart
from .core.timeutil import local_time
from .embedding import EmbedderSlot
from .models import Memory
from .storage.base import Filters, Neighbours
from .storage.sqlite import SQLiteStore

# How many candidates each signal contributes before fusion, whatever top_k asks for
# up to as many: every such recall gathers the same candidates, so its results are
# the first of a larger top_k's. Every candidate is scored by every signal (by its
# words while reading them is cheap: see ``lexical.SCORING_BUDGET``), so a memory
# ranked low by one signal but high by another meets fusion with both scores.
# Deeper lists found no more (LoCoMo R@10 0.785 at 75 and 0.789 at 100, against
# 0.792) and cost about 4 ms more per recall at 100k memories: fusion and lookups
# grow with them.
MIN_CANDIDATES = 50
DEFAULT_WEIGHTS = Weights()
# At most this many candidates without a vector are embedded during a recall.
EMBEDDED_AT_RECALL = 16
# How many of the latest memories of a time a query names are read for those without
# a vector, in each of the two walks (the viewer's own, every session's shared ones).
LATEST_SCANNED = 2_000
# The statuses default recall searches: a consolidated match counts for what stands for it.
_CONDENSED_TOO = ("active", "consolidated")
# Among the best this many results, a newer one that says a change takes the place
# of the older one it changed (``results.changed_after``): every pair is compared, and
# a recall of 10,000 results would compare 50 million.
CHANGES_AMONG = 100
# How much deeper a recall searches again when near copies filled its candidates
# (``search``): 60 log lines alike but for a step number hid the one memory that
# said something else of that file among the first 50 of every signal.
ALIKE_DEEPER = 4
# Among the best this many results, near copies rank below what says something else
# (``results.fewer_alike``): every candidate of the deeper search, at the default depth.
ALIKE_AMONG = MIN_CANDIDATES * ALIKE_DEEPER
# A query may name a source of a database with at most this many. Speakers, agents
# and tools are few; thousands of sources are identifiers (documents, addresses)
# that questions do not name, and looking through them would slow every recall.
NAMED_SOURCES_UP_TO = 1_000
# Reads the texts of memories, by seq (see ``_text_reader``).
TextsOf = Callable[[Iterable[int]], dict[int, str]]


def search(
    store: SQLiteStore,
    slot: EmbedderSlot,
    query: str,
    filters: Filters,
    top_k: int,
    now: float,
    explain: bool = False,
    weights: Weights = DEFAULT_WEIGHTS,
    zone: tzinfo | None = timezone.utc,
) -> list[Memory]:
    """The ``top_k`` memories passing ``filters`` that best match ``query``.

    Originals that sleep consolidated stay searchable: when default recall (active
    memories only) matches one, the match counts for the memory that now stands for
    it (its summary or canonical copy), or for itself where that one is of another
    time than the query names or the filters keep, or by another source. Condensing
    never makes a fact unfindable, nor moves it to another day.

    Where near copies (``results.fewer_alike``) fill the candidates, the search is
    made again, ``ALIKE_DEEPER`` times as deep: sixty log lines a step number apart
    hid a decision about the same file.
    """
    depth = max(MIN_CANDIDATES, top_k)
    # One query vector for both searches: asked for again, the deeper search paid the
    # model about 1.5 ms more, a sixth of a crowded recall.
    embedded = functools.cache(lambda: _query_vector(slot, query))
    found, crowded = _search(store, slot, embedded, query, filters, top_k, now, explain, weights, zone, depth)
    if crowded:
        found, _ = _search(
            store, slot, embedded, query, filters, top_k, now, explain, weights, zone, depth * ALIKE_DEEPER)
    return found


def _query_vector(slot: EmbedderSlot, query: str) -> np.ndarray | None:
    """The query's vector (None when the model fails). Where it asks of "the user" in
    the third person, the mean of its vector and that of the user's own words for it
    (``lexical.as_the_user_says``): the user's turns say "I", notes about the user
    "the user", and either may hold the answer."""
    said = lexical.as_the_user_says(query)
    if said is None:
        return slot.embed([query])[0]
    asked, own_words = slot.embed([query, said])
    if asked is None or own_words is None:
        return asked
    both = asked + own_words
    return both / np.linalg.norm(both)


def _search(
    store: SQLiteStore, slot: EmbedderSlot, embedded: Callable[[], np.ndarray | None], query: str, filters: Filters,
    top_k: int, now: float, explain: bool, weights: Weights, zone: tzinfo | None, depth: int,
) -> tuple[list[Memory], bool]:
    """``search`` among ``depth`` candidates of each signal (``embedded`` gives the
    query's vector, None when the model fails), and whether near copies filled them:
    the candidates reached ``depth``, and half of those ranked were lowered as alike."""
    # When the filters leave fewer word matches than this (10 in most recalls), the
    # memories holding only common words are searched too (see ``lexical.fts_fallback``).
    few_matches = depth // 5
    # "What did the dentist say yesterday": yesterday's memories are candidates
    # whatever their words, the nearest to the query by meaning first, and the latest
    # without a vector. Those that may be returned as they are: a summary made
    # yesterday stands for its originals, and does not crowd out yesterday's others.
    # "Recently", "where did we leave off": up to the latest memory the recall may return.
    local_now = local_time(now, zone)
    last_active = _last_active(store, filters, now) if asks_recent(query) else None
    window = window_seconds(query, local_now, None if last_active is None else local_time(last_active, zone))
    if window is not None and asks_latest(query, local_now):
        # "What's the next step": of the recent time, a weaker match is the answer.
        weights = dataclasses.replace(weights, time_match=weights.latest_match)
    # "What do I have on December 10", asked in November: the memories that mention
    # it, by the ways a date is written, whenever they were made.
    ahead = dates_ahead(query, local_now)
    # A time read relative to now is not what a query asks about: not "3" nor "days"
    # in "where did I park 3 days ago" (a memory of a 3-day stay in January is no
    # answer), nor "month" in "any changes this month".
    asked = Worded(ahead.rest, ()) if window is None else relative_times_apart(ahead.rest)
    terms = [*lexical.search_terms(asked.rest), *asked.phrases, *ahead.forms] or lexical.search_terms(query)
    terms += [word for word in lexical.answer_words(query) if word not in terms]
    # A question about nothing but a time ("what happened last Thursday") is answered
    # by that time's memories alone, listed: not by one that says "Thursday" on a
    # Monday, nor by one that merely reads like an event ("the incident report"), nor
    # by the days around a date that a topical question searches for its retellings.
    # A date ahead beside it is what it asks about ("what did we say yesterday about December 3").
    only_when = window is not None and not ahead.forms and asks_only_when(query)
    # One about nothing but a date ahead ("what's happening in December") by the
    # memories that write it, found by those words alone.
    only_ahead = bool(ahead.forms) and window is None and asks_only_when(query)
    if only_ahead:
        terms = list(ahead.forms)
        if ahead.made_after is not None:  # those made a year before are about an earlier one
            since = max(ahead.made_after.timestamp(), -math.inf if filters.since is None else filters.since)
            filters = dataclasses.replace(filters, since=since)
    # One about nothing but who said it (and when: "what did ci-bot say yesterday")
    # by what that source said (then), listed alike: not by what others said of it.
    # A pronoun that speaks names a chat role: "what did I tell you yesterday" asks
    # what the user said; "what was I told yesterday" names no one.
    role = lexical.chat_role(query)
    named = () if only_when and role is None else _sources_named(store, query, filters, role)
    speakers = _asked_for_alone(query, named, window)
    # A source named beside a topic ("what did the decision-log say about refunds"):
    # its memories are searched apart too, and its words not at all, else many others
    # holding the topic and those words ("staging logs: the refund endpoint...") fill
    # every list before its own.
    beside = () if speakers or only_when or only_ahead else named
    with_their_words = terms
    if beside:
        their_words = {word for source in beside for word in _source_words(source)}
        terms = [term for term in terms if term not in their_words] or terms
    if window is not None and not speakers and not only_when and lexical.in_person(query):
        # "What did I say on Monday" where no memory is the user's, "any messages for
        # me yesterday", "what did you and I say yesterday": that time's memories.
        only_when = _asks_nothing_else(query, [], window)
    redirect = filters.statuses == ("active",)
    if speakers:
        filters = dataclasses.replace(filters, sources=speakers)
    listing = only_when or bool(speakers)
    if listing and redirect:
        # Memories sleep condensed are among what happened then and what a source
        # said: listed through what stands for them, or as themselves where that is
        # of another time (a kept copy made weeks before) or by another source (a
        # summary is by "sleep"), as a search filtered by time or source returns them.
        filters = dataclasses.replace(filters, statuses=_CONDENSED_TOO)
    if listing and window is not None:
        during = _during(filters, window.named)
        if during is None:  # the caller's own filters leave none of that time
            return [], False
        filters = during
    else:
        during = _during(filters, None if window is None else window.span)
    # The memories read by time: a listing's (a source's whenever, unless it names a
    # time), or those of the span a topical question names.
    by_time = filters if listing else during
    # A listing's words name its time or source, not a topic: neither words nor
    # meaning are searched for, and "what happened" in a memory's text does not put
    # it first.
    searched = [] if listing else terms
    by_words_alone = listing or only_ahead
    if redirect:
        filters = dataclasses.replace(filters, statuses=_CONDENSED_TOO)

    def by_meaning() -> tuple[np.ndarray | None, Neighbours, list[tuple[int, float]]]:
        query_vector = embedded()
        if query_vector is None or slot.signature is None:
            return None, Neighbours([], None), []
        neighbours = store.search_vectors(query_vector, filters, depth, slot.signature, FIELD_RANK)
        dated = [] if during is None else store.search_vectors(query_vector, during, depth, slot.signature).hits
        return query_vector, neighbours, dated

    # Embedding the query and scanning vectors release the GIL, and so does SQLite:
    # the two searches overlap, and recall waits for the slower one, not both.
    dense_search = background.submit(by_meaning) if slot.ready and not by_words_alone else None
    # One read snapshot for every lookup: they agree with each other (no memory can
    # be forgotten and its seq reused in between), and pay for one transaction.
    with store.snapshot():
        if beside and searched and searched != with_their_words and not any(
                store.term_frequencies(searched)[0].values()):
            # No memory holds the topic's words ("which timezone is the user in"): the
            # source's are all the query has to find it by ("The user's name is Alex").
            searched = with_their_words
        frequencies, total = store.term_frequencies(searched) if len(searched) > 1 else ({}, 0)
        # A context window holds WINDOW events, so a term matches about WINDOW times as
        # many windows as memories: under the same postings budget fewer terms find
        # candidates there.
        in_windows = {term: count * WINDOW for term, count in frequencies.items()}
        by_field = {"content": frequencies, "context": in_windows}
        # Terms no memory holds score nothing: searched for, they only cost.
        held = {field: lexical.held_terms(searched, frequencies, field == "context") for field in by_field}
        queries = {
            field: field_queries
            for field, counts in by_field.items()
            if (field_queries := lexical.fts_queries(held[field], counts, total))
        }
        fallbacks = {
            field: fallback
            for field, counts in by_field.items()
            if (fallback := lexical.fts_fallback(held[field], counts, total)) is not None
        }
        lexical_hits = store.search_text(queries, filters, depth, fallbacks, few_matches) if queries else {}
        of_beside = dataclasses.replace(filters, sources=beside)
        if beside and queries:
            lexical_hits = _merged(lexical_hits, store.search_text(queries, of_beside, depth, fallbacks, few_matches))
        # Candidates are scored again by the whole query in a field, unless its search
        # ran one query of every term and was not cut: then it found all its matches.
        whole = {field: lexical.fts_expression(terms) for field, terms in held.items()}
        scored_again = {
            field for field, hits in lexical_hits.items()
            if lexical.scored_again(searched, by_field[field]) and not (len(queries[field]) == 1 and len(hits) < depth)
        }
        query_vector, (dense_hits, field_similarity), dated_hits = (
            _nothing_by_meaning() if by_words_alone
            else by_meaning() if dense_search is None
            else background.result_of(dense_search))
        if beside and query_vector is not None and slot.signature is not None:
            of_theirs = store.search_vectors(query_vector, of_beside, depth, slot.signature).hits
            dense_hits = _best_per_key([*dense_hits, *of_theirs])
        # A listing has nothing else to find its memories by: it reads its span
        # exactly, those it puts first (the most important), however many the span
        # holds; a source's, named without a time, its latest. Otherwise the nearest
        # by meaning in the span are searched for, and those without a vector among
        # the span's latest LATEST_SCANNED are enough.
        latest = (
            [] if by_time is None
            else _listed_by_time(store, by_time, depth, ranked=window is not None) if listing
            else store.latest(by_time, depth, LATEST_SCANNED)
        )
        # Listed whatever their words or meaning only when the query asks about nothing
        # but their time or source; otherwise they are candidates that must match like
        # any other.
        listed = dict.fromkeys(latest, 1.0) if listing and window is not None else {}
        of_sources = latest if speakers else []
        # Those without a vector (stored while the model was down, or by a process
        # without it) are embedded now, as those found by their words are.
        waiting = store.without_vectors(latest) if query_vector is not None else latest
        # Similarities are stretched from what "not about this" scores, the same
        # whatever top_k asks for: the FIELD_RANK-th nearest neighbour, or the last
        # where there are fewer. Under MIN_CANDIDATES (counted before summaries stand
        # in for their originals), the search saw a handful: none is a stranger.
        stretch = len(dense_hits) >= MIN_CANDIDATES

        if redirect:
            # A memory of the span a topical question names is stood for only by one of
            # that span too (a listing's span, and the caller's, are in its filters).
            standing_for = store.representatives(
                {seq for found in [*lexical_hits.values(), dense_hits] for seq, _ in found} | {*listed, *of_sources},
                filters, searched, None if listing or window is None else window.span,
            )
            listed = dict(_redirected(listed.items(), standing_for))
            of_sources = list(dict.fromkeys(standing_for.get(seq) or seq for seq in of_sources))
            folded = {field: _redirected(found, standing_for) for field, found in lexical_hits.items()}
            folded_dense = _redirected(dense_hits, standing_for)
            # A sleep may have condensed many matches into one summary: they count for
            # it once, and may have filled a signal's list. The active memories ranked
            # below them are then searched for on their own, at the same depth (scores
            # of one query over one index compare across the two searches).
            active = dataclasses.replace(filters, statuses=("active",))
            if any(_crowded(lexical_hits[field], folded[field], depth) for field in lexical_hits):
                more = store.search_text(queries, active, depth, fallbacks, few_matches)
                folded = {field: _best_per_key([*found, *more.get(field, [])]) for field, found in folded.items()}
            if query_vector is not None and slot.signature is not None and _crowded(dense_hits, folded_dense, depth):
                folded_dense = _best_per_key(
                    [*folded_dense, *store.search_vectors(query_vector, active, depth, slot.signature).hits]
                )
            lexical_hits, dense_hits = folded, folded_dense
        dated = {seq for seq, _ in dated_hits} | set(waiting) | set(listed) | set(of_sources)
        if query_vector is not None:  # their similarities, beside those of the nearest overall
            dense_hits = _best_per_key([*dense_hits, *dated_hits])
        keys = {seq for hits in lexical_hits.values() for seq, _ in hits} | {seq for seq, _ in dense_hits} | dated
        lexical_hits = _scored_in_full(store, lexical_hits, whole, keys, scored_again)
        # What a turn means often lives in its neighbours, for meaning as for words. Dense
        # hits mean the vector search just brought the index up to date for this model.
        dense_window_hits = (
            store.window_similarities(query_vector, keys, MAX_GAP_S)
            if query_vector is not None and dense_hits
            else []
        )
        # Whether the neighbours of one found by their words alone are its conversation,
        # or facts stored beside it (``ranking.Weights.coherence_floor``).
        by_neighbours_words = {seq for seq, _ in lexical_hits.get("context", ())}.difference(
            seq for seq, _ in lexical_hits.get("content", ()))
        coherence = store.neighbour_similarities(by_neighbours_words, MAX_GAP_S) if dense_window_hits else []
        if query_vector is not None and dense_hits:
            # Those found otherwise (by their words, their time) have a similarity too,
            # however far below the nearest.
            dense_hits = [*dense_hits, *store.similarities(query_vector, keys.difference(seq for seq, _ in dense_hits))]
        facts = store.ranking_facts(keys)
        if query_vector is not None and dense_hits:
            found_by_words = dict.fromkeys(seq for hits in lexical_hits.values() for seq, _ in hits if seq in facts)
            embedded_now = _similarities_now(store, slot, query_vector, [*found_by_words, *waiting])
            # Its neighbours' vectors are not indexed with it: its window is itself.
            dense_hits, dense_window_hits = [*dense_hits, *embedded_now], [*dense_window_hits, *embedded_now]
        # A listing is in its memories' own order: a pronoun favours no one there ("what
        # was I told yesterday"); one that speaks lists its role's alone.
        naming = lexical.source_terms(query, pronouns=not listing)
        left_out = None if listing else lexical.role_left_out(query)
        candidates = {
            seq: Candidate(
                importance=row["importance"],
                created_at=row["created_at"],
                access_count=row["access_count"],
                session_id=row["session_id"],
                source_match=1.0 if naming.intersection(_source_words(row["source"])) else 0.0,
                length=row["length"],
                superseded=row["status"] == "superseded",
                other_role=left_out in _source_words(row["source"]),
            )
            for seq, row in facts.items()
        }
        # A listing is what was said or happened, in order: an older value is part of it.
        examined = top_k if listing else depth
        ranked = fuse(lexical_hits, dense_hits, candidates, now, window, weights, dense_window_hits,
                      stretch, field_similarity, examined, listed, of_sources, _copies(store, facts), explain,
                      dict(coherence))
        crowded = False
        if not listing and query_vector is not None:
            head = ranked[:ALIKE_AMONG]
            closeness = store.closeness([r.key for r in head])
            before = {r.key: r.score for r in head}
            alike = results.fewer_alike(head, closeness, weights.alike, weights.alike_factor)
            lowered = {r.key for r in alike if r.score < before[r.key]}
            ranked = sorted([*alike, *ranked[len(head):]], key=lambda r: -r.score)
            # Counted among all examined, not the first top_k: a smaller top_k returns the
            # first results of a larger one.
            crowded = len(candidates) >= depth and 2 * len(lowered) >= len(head)
        if not listing:
            texts = _text_reader(store)
            if past_tense.asks_what_happened(query):
                head = ranked[:max(top_k, MIN_CANDIDATES)]
                contents = texts(r.key for r in head)
                tells = {key for key, text in contents.items() if past_tense.tells_what_happened(text)}
                ranked = [*results.told_first(head, tells, weights.told), *ranked[len(head):]]
            ranked = results.newer_first(ranked, _statements(texts, ranked, facts, top_k), weights.superseded)[:top_k]
            if query_vector is not None and window is None:
                head = ranked[:CHANGES_AMONG]
                closeness, row = store.closeness([r.key for r in head]), {r.key: i for i, r in enumerate(head)}
                ranked = results.changed_after(
                    ranked, _said(texts, head, facts), lambda a, b: float(closeness[row[a], row[b]]),
                    weights.changed_close, weights.episode_gap_s)
        memories = store.memories_by_seq((r.key for r in ranked), filters)
    return [
        dataclasses.replace(memories[r.key], score=r.score, explanation=r.components if explain else None)
        for r in ranked
        if r.key in memories  # a vector hit (another snapshot) forgotten since
    ], crowded


def _last_active(store: SQLiteStore, filters: Filters, now: float) -> float | None:
    """The time of the latest memory up to ``now`` that passes ``filters``: of the
    session's own (private, as memories are by default) where it has any, else of
    any the viewer may see. Another agent's shared note of yesterday is not where
    this one left off."""
    until = now if filters.until is None else min(filters.until, now)
    seen = dataclasses.replace(filters, until=until)
    own = dataclasses.replace(seen, scope="session")
    for lookup in (own, seen) if filters.scope is None else (seen,):
        if latest := store.latest(lookup, 1):
            return float(store.ranking_facts(latest)[latest[0]]["created_at"])
    return None


def _copies(store: SQLiteStore, facts: Mapping[int, sqlite3.Row]) -> dict[int, int]:
    """The candidates that are copies of one another (see ``results.copies``), each to
    one key of its text. A value sleep superseded is no copy of one still current.
    Only those sharing a content hash are read: most recalls read none."""
    fingerprints = {seq: (row["content_hash"], row["status"] == "superseded") for seq, row in facts.items()}
    twins = results.sharing(fingerprints)
    return results.copies(fingerprints, store.contents_by_seq(twins)) if twins else {}


def _text_reader(store: SQLiteStore) -> TextsOf:
    """What reads candidates' texts from ``store`` for one recall, each text once
    however often it is asked for."""
    read: dict[int, str] = {}

    def texts(keys: Iterable[int]) -> dict[int, str]:
        wanted = list(keys)
        if missing := [key for key in wanted if key not in read]:
            read.update(store.contents_by_seq(missing))
        return {key: read[key] for key in wanted if key in read}

    return texts


def _statements(
    texts: TextsOf, ranked: list[Ranked], facts: Mapping[int, sqlite3.Row], top_k: int
) -> dict[int, results.Statement]:
    """The ranked candidates that state a fact (see ``results.newer_first``), each said
    when the latest of its copies was. Those sleep superseded already rank below what
    replaced them. Those past ``top_k`` are read only if one of the first ``top_k``
    states a fact: only such a one can be moved out of the results."""
    current = [r for r in ranked if facts[r.key]["status"] != "superseded"]
    statements = _stated(texts, current[:top_k], facts)
    return {**statements, **_stated(texts, current[top_k:], facts)} if statements else {}


def _stated(
    texts: TextsOf, ranked: list[Ranked], facts: Mapping[int, sqlite3.Row]
) -> dict[int, results.Statement]:
    contents = texts(r.key for r in ranked)
    statements = {}
    for r in ranked:
        fact = fact_key(contents[r.key]) if r.key in contents else None
        if fact is not None:
            row = facts[r.key]
            said_at = max(facts[key]["created_at"] for key in (r.key, *r.copies))
            statements[r.key] = results.Statement(fact, said_at, row["session_id"], row["scope"] == "global")
    return statements


def _said(texts: TextsOf, ranked: list[Ranked], facts: Mapping[int, sqlite3.Row]) -> dict[int, results.Said]:
    """Who said each ranked candidate, when its text was last said, and whether it
    says a change (see ``results.changed_after``); none, where none says a change,
    as then nothing is changed (reading whether each speaks of its speaker costs
    0.5 s in a 5 MB text)."""
    contents = texts(r.key for r in ranked)
    changes = {key: says_a_change(text) for key, text in contents.items()}
    if not any(changes.values()):
        return {}
    said = {}
    for r in ranked:
        if r.key in contents:
            row = facts[r.key]
            said[r.key] = results.Said(
                said_at=max(facts[key]["created_at"] for key in (r.key, *r.copies)),
                session_id=row["session_id"],
                source=row["source"],
                shared=row["scope"] == "global",
                personal=of_its_speaker(contents[r.key]),
                changes=changes[r.key],
            )
    return said


def _sources_named(store: SQLiteStore, query: str, filters: Filters, role: str | None) -> tuple[str, ...]:
    """The database's sources that a query names, or else the chat ``role`` its pronoun
    points at ("what did I say on Monday": the source "user"), of those the caller's
    filters keep and the viewer has memories of.

    A source only other sessions' private memories have is no source to the viewer:
    naming it changes nothing.
    """
    sources = store.sources(NAMED_SOURCES_UP_TO)
    if sources is None:
        return ()
    named = lexical.named_sources(query, _source_index(sources))
    if not named and role in sources:
        named = [role]
    kept = [source for source in named if not filters.sources or source in filters.sources]
    return tuple(lexical.outermost([source for source in kept if _heard_from(store, source, filters)]))


def _asked_for_alone(query: str, named: tuple[str, ...], window: Window | None) -> tuple[str, ...]:
    """The ``named`` sources a query asks about and nothing else besides what they
    said and a time it names ("what did ci-bot say", "the user's messages
    yesterday"); none when it asks about anything else ("what did ci-bot say about
    arm64", "what did the user say about the budget")."""
    if len(named) > 1:  # "notes from ci-bot": the source "notes" is what ci-bot said
        named = tuple(source for source in named if not lexical.speech_only(source)) or named
    return named if named and _asks_nothing_else(query, list(named), window) else ()


def _listed_by_time(store: SQLiteStore, filters: Filters, depth: int, ranked: bool) -> list[int]:
    """The ``depth`` memories a listing reads of its span or source: those it puts
    first (``ranked``: the most important, for a span), else the latest.

    A span's condensed memories are read apart from its active ones (each down its
    own stretch of the importance indexes): the many one summary stands for would
    fill the read and fold into it, leaving out the span's other memories.
    """
    if not ranked:
        return store.latest(filters, depth)
    if filters.statuses != _CONDENSED_TOO:
        return store.most_important(filters, depth)
    return list(dict.fromkeys(seq for status in _CONDENSED_TOO for seq in store.most_important(
        dataclasses.replace(filters, statuses=(status,)), depth)))


def _asks_nothing_else(query: str, sources: list[str], window: Window | None) -> bool:
    """Whether a query naming ``sources`` asks for what they said (at the time it
    names) and nothing else."""
    asked = query if window is None else without_times(query)
    besides = lexical.asked_besides(asked, sources)
    return (besides is not None and all(word in HAPPENING for word in besides)
            and lexical.asks_for_what_was_said(asked, sources))


def _heard_from(store: SQLiteStore, source: str, filters: Filters) -> bool:
    """Whether the viewer may see any memory of ``source`` (whatever its status) in
    the scope the filters keep."""
    return bool(store.latest(Filters(filters.viewer_session, scope=filters.scope, sources=(source,), statuses=()), 1))


@functools.lru_cache(maxsize=16)
def _source_index(sources: frozenset[str]) -> lexical.SourceIndex:
    """The store's sources by word, made again only when they change (the store hands
    out the same set until then)."""
    return lexical.index_sources(sources)


def _scored_in_full(
    store: SQLiteStore, hits: dict[str, list[tuple[int, float]]], whole: dict[str, str | None], keys: set[int],
    fields: set[str],
) -> dict[str, list[tuple[int, float]]]:
    """``hits`` with every candidate's score for the ``whole`` query of each of
    ``fields``, whatever found it.

    A field's search keeps only its best matches: a memory found by meaning or by its
    time that also holds a query word would score nothing for it below that cut, and
    how deep the search went (how many results were asked for) would decide its rank.
    """
    missing = {field: keys.difference(seq for seq, _ in hits[field]) for field in fields}
    filled: dict[str, list[tuple[int, float]]] = {}
    for query in dict.fromkeys(whole.values()):
        asked = {field: seqs for field, seqs in missing.items() if seqs and whole[field] == query}
        if query is not None and asked:
            filled.update(store.text_scores(query, asked))
    if not filled:
        return hits
    return {field: [*found, *filled.get(field, [])] for field, found in hits.items()}


def _nothing_by_meaning() -> tuple[None, Neighbours, list[tuple[int, float]]]:
    return None, Neighbours([], None), []


def _during(filters: Filters, window: tuple[float, float] | None) -> Filters | None:
    """``filters`` narrowed to the ``[start, end)`` span a query names; None when it
    names none, or none that the filters leave open."""
    if window is None:
        return None
    since = window[0] if filters.since is None else max(filters.since, window[0])
    last = math.nextafter(window[1], -math.inf)  # ``until`` is inclusive
    until = last if filters.until is None else min(filters.until, last)
    return None if since > until else dataclasses.replace(filters, since=since, until=until)


def _similarities_now(
    store: SQLiteStore, slot: EmbedderSlot, query_vector: np.ndarray, found: list[int]
) -> list[tuple[int, float]]:
    """Similarities of the candidates found by their words (best matches first) or
    in the time the query names that have no vector yet (stored while the model was
    down, or by a process without it), embedded now.

    Left without one, such a memory would score nothing for meaning, and any
    neighbour by meaning would outrank the memory holding every word of the query.
    The vectors are not stored: the backfill does that.
    """
    waiting = store.without_vectors(dict.fromkeys(found))[:EMBEDDED_AT_RECALL]
    if not waiting:
        return []
    contents = store.contents_by_seq(waiting)
    seqs = [seq for seq in waiting if seq in contents]
    vectors = slot.embed([contents[seq] for seq in seqs])
    return [(seq, float(vector @ query_vector)) for seq, vector in zip(seqs, vectors, strict=True)
            if vector is not None]


@functools.lru_cache(maxsize=1024)
def _source_words(source: str) -> frozenset[str]:
    """A source's words. A store has few distinct sources and every candidate has one."""
    return frozenset(lexical.tokenize(source))


def _crowded(found: list[tuple[int, float]], folded: list[tuple[int, float]], depth: int) -> bool:
    """Whether a search that filled its ``depth`` kept under half of it once summaries
    stood in for their originals: active matches may wait below."""
    return len(found) == depth and len(folded) < depth // 2


def _redirected(hits: Iterable[tuple[int, float]], standing_for: dict[int, int | None]) -> list[tuple[int, float]]:
    """Hits on consolidated memories moved to their representative (best score kept).

    A consolidated memory that no memory passing the filters stands for (its summary
    is by source "sleep" and the query asks for "chat", say) is returned itself: it
    passed the filters, and the fact must stay findable.
    """
    return _best_per_key((standing_for.get(seq) or seq, score) for seq, score in hits)


def _merged(
    found: dict[str, list[tuple[int, float]]], more: dict[str, list[tuple[int, float]]]
) -> dict[str, list[tuple[int, float]]]:
    """Two searches' hits per field, each key once (scores of one query over one index
    compare across searches)."""
    return {field: _best_per_key([*found.get(field, []), *more.get(field, [])]) for field in {**found, **more}}


def _best_per_key(hits: Iterable[tuple[int, float]]) -> list[tuple[int, float]]:
    """Each key once, with its best score; best first."""
    best: dict[int, float] = {}
    for key, score in hits:
        if score > best.get(key, float("-inf")):
            best[key] = score
    return sorted(best.items(), key=lambda item: -item[1])
