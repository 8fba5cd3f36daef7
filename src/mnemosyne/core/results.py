"""What a ranking hands back (pure): each text once, and a fact's newer value above
its older one.

An agent says things again: a preference restated every week, the same status line
logged every night. ``remember`` stores a repeat outside its dedupe window, and sleep
merges repeats later; until then a recall would spend its results on one sentence
several times. Copies are folded into the best ranked of them, which carries its own
score and time: the copy of the week a query names, or the freshest, or the most
important, as ranking decided.

A value that changed ("The staging host is staging-1." then "The staging host is now
stg-eu-2.") is superseded by sleep; until then (and where sleep cannot tell, across
sessions) both are candidates, and the older, being shorter or matching more of the
query, often ranks first. Among the best ranked candidates, a statement of a fact
ranks below the newest one that says otherwise of the same attribute.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Hashable, Mapping, Sequence
from typing import NamedTuple

import numpy as np

from .dedup import Fact, cased, personal
from .ranking import Ranked


def copies(fingerprints: Mapping[int, Hashable], contents: Mapping[int, str]) -> dict[int, int]:
    """Each candidate that is a copy of another, by key, to the first key of its text.

    ``fingerprints`` holds each candidate's content hash (case and spacing aside: see
    ``fingerprint.content_hash``) with anything else two copies must share; ``contents``
    the text of those whose fingerprint another candidate shares (see ``sharing``).
    Case counts only in a word whose case is part of it (an identifier, a secret, a
    name written in capitals): "Deploy on Friday" and "deploy on Friday" are one text,
    "Password: Hunter2" and "password: hunter2" are not.

    >>> copies({1: "h", 2: "h", 3: "g"}, {1: "Deploy on Friday", 2: "deploy  on Friday"})
    {1: 1, 2: 1}
    """
    texts: dict[Hashable, list[int]] = defaultdict(list)  # the first key of each text, by fingerprint
    first: dict[int, int] = {}
    for key in sorted(contents):
        if key not in fingerprints:
            continue
        same = texts[fingerprints[key]]
        text = contents[key]
        original = next((k for k in same if contents[k] == text or _same_words(contents[k], text)), None)
        if original is None:
            same.append(key)
            original = key
        first[key] = original
    shared = {original for key, original in first.items() if key != original}
    return {key: original for key, original in first.items() if original in shared}


def sharing(fingerprints: Mapping[int, Hashable]) -> list[int]:
    """The keys whose fingerprint another key shares: the only ones that may be copies,
    and the only ones whose text ``copies`` needs."""
    count: dict[Hashable, int] = defaultdict(int)
    for fingerprint in fingerprints.values():
        count[fingerprint] += 1
    return [key for key, fingerprint in fingerprints.items() if count[fingerprint] > 1]


def _same_words(a: str, b: str) -> bool:
    """Whether two texts of one fingerprint are one: each word the same but for the
    case of a word whose case is not part of it."""
    words_a, words_b = a.split(), b.split()
    return len(words_a) == len(words_b) and all(
        x == y or (x.lower() == y.lower() and not (cased(x) or cased(y)))  # not "Straße", "STRASSE"
        for x, y in zip(words_a, words_b, strict=True)
    )


class Statement(NamedTuple):
    """A candidate that states a fact (``dedup.fact_key``), and who may correct it."""

    fact: Fact
    said_at: float  # when its text was last said: the latest of the copies it stands for
    session_id: str
    shared: bool  # global: every session's global statements may correct it


def newer_first(ranked: Sequence[Ranked], statements: Mapping[int, Statement], factor: float) -> list[Ranked]:
    """``ranked`` (best first) with each statement that a newer one contradicts ranked
    below it: its score becomes the newer one's (if lower) times ``factor``, the
    multiplier of a value sleep superseded, which ``explain`` shows as ``superseded``.

    A statement is contradicted when the newest of the statements of its attribute
    (and kind of value) that may correct it and say anything of its value gives
    another value, or negates it. Those that may correct it: its own session's, and
    for a global one every session's global ones (a session's private "the user's
    name is Ana" is about its own user, whatever another session shares), unless it
    is of whoever the session speaks for ("my", "the user's": another session's
    user is another). A negation
    says nothing of another value ("the owner is not Bob" beside "the owner is
    Alice"). Statements said at the same time do not correct each other.

    >>> from mnemosyne.core.dedup import fact_key
    >>> old = Statement(fact_key("The host is db-1."), 1.0, "a", False)
    >>> new = Statement(fact_key("The host is now db-2."), 2.0, "a", False)
    >>> [r.key for r in newer_first([Ranked(1, 0.9, {}), Ranked(2, 0.8, {})], {1: old, 2: new}, 0.75)]
    [2, 1]
    """
    score = {r.key: r.score for r in ranked}
    by_attribute: dict[tuple[str, str], list[int]] = defaultdict(list)
    for key in score:
        if key in statements:
            fact = statements[key].fact
            by_attribute[fact.attribute, fact.kind].append(key)
    demoted: dict[int, float] = {}
    for keys in by_attribute.values():
        if len(keys) < 2:
            continue
        # The newest first: a statement sinks below a newer one's final score.
        for key in sorted(keys, key=lambda k: -statements[k].said_at):
            newest = _newest_saying(statements, key, keys)
            if newest and all(_contradicts(statements[key].fact, statements[k].fact) for k in newest):
                lowered = min(score[key], max(score[k] for k in newest)) * factor
                demoted[key], score[key] = lowered / score[key] if score[key] else factor, lowered
    if not demoted:
        return list(ranked)
    moved = [_rescored(r, score[r.key], by=demoted[r.key]) if r.key in demoted else r for r in ranked]
    return sorted(moved, key=lambda r: -r.score)  # stable: ties keep their order


def fewer_alike(ranked: Sequence[Ranked], closeness: np.ndarray, alike: float, factor: float) -> list[Ranked]:
    """``ranked`` (best first) with each result that reads almost as one ranked above
    it (a cosine of ``alike`` or more in ``closeness``, whose rows and columns are
    ``ranked``'s) multiplied by ``factor`` for each such one, and sorted again: forty
    log lines alike but for a step number no longer fill a recall before a memory
    that says something else. All stay among the results; ``explain`` shows the
    factor as ``alike``.

    >>> closeness = np.array([[1.0, 0.98, 0.1], [0.98, 1.0, 0.1], [0.1, 0.1, 1.0]])
    >>> [r.key for r in fewer_alike([Ranked(1, 1.0, {}), Ranked(2, 0.9, {}), Ranked(3, 0.8, {})], closeness, 0.95, 0.8)]
    [1, 3, 2]
    """
    alike_above = np.tril(closeness >= alike, k=-1).sum(axis=1)
    if not alike_above.any():
        return list(ranked)
    moved = [
        _rescored(r, r.score * factor**int(above), "alike", factor**int(above)) if above else r
        for r, above in zip(ranked, alike_above, strict=True)
    ]
    return sorted(moved, key=lambda r: -r.score)  # stable: ties keep their order


def told_first(ranked: Sequence[Ranked], tells: Collection[int], factor: float) -> list[Ranked]:
    """``ranked`` (best first) with each result in ``tells`` (those that tell what
    happened, for a query that asks it) multiplied by ``factor`` and sorted again;
    ``explain`` shows the factor as ``told``.

    >>> [r.key for r in told_first([Ranked(1, 1.0, {}), Ranked(2, 0.9, {})], {2}, 1.2)]
    [2, 1]
    """
    if not tells:
        return list(ranked)
    moved = [_rescored(r, r.score * factor, "told", factor) if r.key in tells else r for r in ranked]
    return sorted(moved, key=lambda r: -r.score)  # stable: ties keep their order


class Said(NamedTuple):
    """When and by whom a result was said, and whether it says a change
    (``changes.says_a_change``)."""

    said_at: float
    session_id: str
    source: str
    shared: bool
    personal: bool  # speaks of whoever said it (``changes.of_its_speaker``)
    changes: bool


def changed_after(
    ranked: Sequence[Ranked], said: Mapping[int, Said], similarity: Callable[[int, int], float], close: float,
    apart: float,
) -> list[Ranked]:
    """``ranked`` (best first) with each result that a newer one, which says a change
    and is ``close`` to it in meaning, ranks above, changed by that one: the newer
    takes its place (its score, if higher: it answers what the older one matched)
    and the older ranks just below it. Both stay among the results, since what
    changed is read from the words "now", "moved", "no longer" and a similarity, not
    from a fact's attribute and value as in ``newer_first``. ``explain`` shows the
    newer one's rise as ``replaces``, the older one's fall as ``superseded``.

    Only results in ``said`` are compared: those missing from it keep their place
    among the others.

    The newer one may change it when both are of one session, or both global. One
    that speaks of whoever said it ("I moved to Lisbon", "my address") is changed
    only by its own session and source: another's "I" is another person.
    ``similarity(a, b)`` is the cosine of two results' vectors; ``apart``, how much
    later the change must be said (within one episode, talk goes on).

    >>> said = {1: Said(1.0, "a", "user", False, False, False), 2: Said(2.0, "a", "user", False, False, True)}
    >>> [r.key for r in changed_after([Ranked(1, 0.9, {}), Ranked(2, 0.8, {})], said, lambda a, b: 0.7, 0.6, 0.0)]
    [2, 1]
    """
    score = {r.key: r.score for r in ranked}
    lowered: set[int] = set()
    raised: set[int] = set()
    for place, newer in enumerate(ranked):
        this = said.get(newer.key)
        if this is None or not this.changes:
            continue
        for older in ranked[:place]:
            that = said.get(older.key)
            if (
                that is not None and that.said_at < this.said_at - apart and score[older.key] > score[newer.key]
                and _may_change(this, that) and similarity(older.key, newer.key) >= close
            ):
                if older.key not in lowered:  # its own score, not one a change below gave it
                    score[newer.key] = max(score[newer.key], score[older.key])
                    raised.add(newer.key)
                score[older.key] = score[newer.key] * _JUST_BELOW
                lowered.add(older.key)
    if not lowered:
        return list(ranked)
    moved = [
        _rescored(r, score[r.key], "superseded" if r.key in lowered else "replaces")
        if r.key in lowered | raised else r
        for r in ranked
    ]
    return sorted(moved, key=lambda r: -r.score)  # stable: ties keep their order


# What a changed result's score becomes, times the score of the newer one that changed it.
_JUST_BELOW = 0.999


def _may_change(newer: Said, older: Said) -> bool:
    if newer.personal or older.personal:
        return newer.session_id == older.session_id and newer.source == older.source
    return newer.session_id == older.session_id or (newer.shared and older.shared)


def _newest_saying(statements: Mapping[int, Statement], key: int, keys: Sequence[int]) -> list[int]:
    """The newest statements among ``keys`` that may correct ``key``'s and say
    anything of its value (all of them, if several were said at that time)."""
    this = statements[key]
    relevant = [
        k for k in keys
        if statements[k].said_at > this.said_at and _may_correct(statements[k], this)
        and _speaks_of(statements[k].fact, this.fact)
    ]
    latest = max((statements[k].said_at for k in relevant), default=None)
    return [k for k in relevant if statements[k].said_at == latest]


def _may_correct(newer: Statement, older: Statement) -> bool:
    if newer.session_id == older.session_id:
        return True
    return newer.shared and older.shared and not personal(older.fact)


def _speaks_of(newer: Fact, older: Fact) -> bool:
    """Whether ``newer`` agrees with ``older`` or contradicts it (see ``_contradicts``)."""
    return newer.value == older.value or not (newer.negated or older.negated)


def _contradicts(older: Fact, newer: Fact) -> bool:
    """Whether ``newer`` says ``older``'s value no longer holds: another value, or the
    same value negated (or no longer negated)."""
    if newer.value == older.value:
        return newer.negated != older.negated
    return not (newer.negated or older.negated)


def _rescored(ranked: Ranked, score: float, factor: str = "superseded", by: float | None = None) -> Ranked:
    """``ranked`` at ``score``; explained, the ``factor`` that moved it shows by how
    much (``by``, by default the ratio of the scores)."""
    components = dict(ranked.components)
    if components:
        if by is None:
            by = score / ranked.score if ranked.score else 1.0
        components[factor] = components.get(factor, 1.0) * by
        components["score"] = score
    return Ranked(ranked.key, score, components, ranked.copies)
