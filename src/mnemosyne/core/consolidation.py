"""The sleep planner: memories + now -> the changes one sleep makes (pure).

``plan_consolidation`` reads nothing and writes nothing; it is deterministic, so
running it again on its own output plans nothing (sleep is idempotent). Steps, in
order, each on what the previous ones left active:

1. **expire** memories past ``valid_until`` (status ``expired``: hidden, kept);
2. **supersede** an older "<subject> is <value>" fact by a newer one with another
   value for the same subject ("is now", "moved to", "was renamed to": see
   ``dedup.fact_key``; the old one is kept, linked, status ``superseded``),
   wherever the old one lives: active, or consolidated behind a summary, which
   stops quoting it;
3. **merge** near-duplicates into one member (the canonical memory: a global one,
   else the earliest), which takes the latest sighting, the summed occurrence count
   and the highest importance, and keeps its own ``created_at`` (when it happened:
   its place in the timeline). Across sessions nothing merges unless the policy
   shares (``promote_recurring``); then only repeats merge, and copies several
   sessions hold privately fold into a new global ``fact`` memory of the shared
   text, so no session loses sight of them and none sees another's row. Groups
   whose survivors the next sleep would merge are merged now (:mod:`.settle`);
4. **promote** session memories marked important to ``global`` (only if the policy
   asks: it shows a session's own text, source and metadata to every session);
5. **summarise** closed episodes into ``summary`` memories linked to every source;
   a source is marked ``consolidated`` when the summary represents it (or, with
   ``consolidate="all"``, always), unless it is important enough to stay in view,
   when the summary does not quote it; a summary that would hide no source is not
   made;
6. **decay / reinforce** the strength of what is still active.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InvalidInputError
from .dedup import DupRules, Fact, Reading, duplicate_groups, fact_key, personal, quoted_words, values
from .episodes import split_episodes
from .fingerprint import content_hash
from .lexical import STOPWORDS, tokenize
from .settle import settle
from .summarise import (
    NOTHING_LEFT,
    extractive_summary,
    split_header,
    split_sentences,
    summary_header,
    without_quotes_of,
)
from .validation import finite_number, whole_number

DAY = 86_400.0


@dataclass(frozen=True, slots=True)
class Record:
    """What the planner knows about one stored memory (times in Unix seconds)."""

    id: str
    session_id: str
    scope: str
    kind: str
    status: str
    content: str
    content_hash: str
    importance: float
    created_at: float
    valid_until: float | None = None
    access_count: int = 0
    last_accessed_at: float | None = None
    strength: float = 1.0
    occurrences: int = 1
    last_seen_at: float | None = None
    episode_id: str | None = None


@dataclass(frozen=True, slots=True)
class SleepPolicy:
    """Every knob of consolidation, with conservative defaults.

    >>> SleepPolicy(episode_gap=600, promote_importance=0.9)  # important session memories go global
    """

    episode_gap: float = 1800.0  # seconds of silence that end an episode
    summarise_after: float = DAY  # an episode is summarised once it ended this long ago
    # An explicit episode whose ``with`` block never ended (its process died) counts
    # as ended once nothing was written to it for this long: a restart must not
    # keep it from being summarised forever.
    abandoned_after: float = 7 * DAY
    min_episode_size: int = 3
    summary_max_chars: int = 1000
    summary_max_sentences: int = 8
    keep_importance: float = 0.8  # sources this important stay active beside the summary
    # Which summarised sources leave default recall: "represented" ones (the summary
    # quotes each of their sentences that carries min_info_words or more, or a
    # number, word for word as a sentence of its own: "Thanks!" and "Wow" need no
    # quote), or "all" of them.
    # Sources left active are still linked from the summary. Two words can be a
    # whole fact ("Bob resigned."), and summaries quote only longer sentences: such a
    # source stays active unless the summary says it.
    consolidate: str = "represented"
    min_info_words: int = 2
    duplicates: DupRules = field(default_factory=DupRules)
    # A text repeated in >= 2 sessions is shared as a new global memory. Opt-in: a
    # session memory is private by its scope, whoever else happens to say the same.
    promote_recurring: bool = False
    # Session memories this important become global (None: never). Opt-in: the row
    # itself goes global, its source and metadata with it.
    promote_importance: float | None = None
    supersede: bool = True
    half_life_days: float = 30.0
    strength_step: float = 0.05  # smaller strength changes are not written

    def __post_init__(self) -> None:
        # A NaN would make every comparison in the planner false without a word.
        for name in ("episode_gap", "summarise_after", "abandoned_after", "keep_importance",
                     "half_life_days", "strength_step", "promote_importance"):
            value = getattr(self, name)
            if name == "promote_importance" and value is None:
                continue
            number = finite_number(value)
            if number is None:
                raise InvalidInputError(f"SleepPolicy.{name} must be a finite number, got {value!r}")
            object.__setattr__(self, name, number)  # plain floats from here on, NumPy's included
        for name, positive in (("episode_gap", True), ("half_life_days", True),
                               ("summarise_after", False), ("abandoned_after", False)):
            value = getattr(self, name)
            if value < 0 or (positive and value == 0):
                bound = "> 0" if positive else ">= 0"
                raise InvalidInputError(f"SleepPolicy.{name} must be {bound}, got {value!r}")
        # Importance runs from 0 to 1: a promote_importance outside it is a typo, and a
        # negative one would share every session's private memories with all. (A
        # keep_importance above 1 keeps no source in view, below 0 every one.)
        if self.promote_importance is not None and not 0 <= self.promote_importance <= 1:
            raise InvalidInputError(
                f"SleepPolicy.promote_importance must be between 0 and 1, got {self.promote_importance!r}"
            )
        for name, least in (("min_episode_size", 2), ("summary_max_chars", 1), ("summary_max_sentences", 1),
                            ("min_info_words", 0)):
            value = getattr(self, name)
            number = whole_number(value)
            if number is None or number < least:
                raise InvalidInputError(f"SleepPolicy.{name} must be an integer >= {least}, got {value!r}")
            object.__setattr__(self, name, number)
        if not isinstance(self.duplicates, DupRules):
            raise InvalidInputError(f"SleepPolicy.duplicates must be a DupRules, got {self.duplicates!r}")
        for name in ("promote_recurring", "supersede"):
            if not isinstance(getattr(self, name), (bool, np.bool_, int)) or getattr(self, name) not in (0, 1):
                raise InvalidInputError(f"SleepPolicy.{name} must be True or False, got {getattr(self, name)!r}")
            object.__setattr__(self, name, bool(getattr(self, name)))
        if self.consolidate not in ("represented", "all"):
            raise InvalidInputError(
                f"SleepPolicy.consolidate must be 'represented' or 'all', got {self.consolidate!r}"
            )


DEFAULT_POLICY = SleepPolicy()

# The session of the memories sleep makes to share what several sessions hold: none
# of theirs, so that no session's name is shown to the others.
SHARED_SESSION = "mnemosyne:shared"


def sharing_key(text: str) -> str:
    """What two sessions' texts must share to be shared: the same words in the same
    order (case and punctuation aside). A digest, as it outlives a forgotten text."""
    return content_hash(" ".join(tokenize(text)))


@dataclass(frozen=True, slots=True)
class NewRecord:
    """A memory sleep creates: an episode's summary, or the shared copy of a fact that
    several sessions hold (kind ``fact``). ``key`` names it in links until it has an id."""

    key: str
    kind: str
    session_id: str
    scope: str
    content: str
    importance: float
    created_at: float
    last_seen_at: float
    strength: float
    sources: tuple[str, ...]
    source_texts: tuple[str, ...]
    occurrences: int = 1
    episode_id: str | None = None
    label: str | None = None
    kept: tuple[str, ...] = ()  # sources of a summary that stay in view: it does not quote them

    @property
    def condensed_texts(self) -> list[str]:
        """The texts a summary condenses: its sources' but those that stay in view."""
        return [text for source, text in zip(self.sources, self.source_texts, strict=True) if source not in self.kept]


@dataclass(frozen=True, slots=True)
class Link:
    src: str  # a memory id, or a NewRecord key
    dst: str
    kind: str  # 'summarises' | 'merges' | 'supersedes'


@dataclass(frozen=True, slots=True)
class StoredSummary:
    """A summary an earlier sleep made: the events it summarises (in time order) and
    the rule that judged which of them it stands for (see :func:`consolidation_rule`)."""

    sources: tuple[str, ...]
    rule: object = None


# What a sleep report counts, per rule (SleepReport's fields of these names).
COUNTED = ("merged", "summaries", "summarised", "superseded", "expired", "promoted", "decayed", "reinforced")


@dataclass(slots=True)
class Plan:
    """The changes one sleep makes: column updates, new memories, new links."""

    updates: dict[str, dict[str, Any]] = field(default_factory=dict)
    created: list[NewRecord] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)
    # Memories whose changes stand or fall together beyond a link: a summary's new
    # text, the values it stopped quoting and what superseded them.
    bound: list[tuple[str, ...]] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.updates and not self.created and not self.links

    def report_counts(self) -> dict[str, int]:
        """The count of each rule's changes, as a sleep report gives them."""
        return {name: int(self.counts.get(name, 0)) for name in COUNTED}

    def set(self, memory_id: str, **values: Any) -> None:
        self.updates.setdefault(memory_id, {}).update(values)


def plan_consolidation(
    memories: Sequence[Record],
    now: float,
    policy: SleepPolicy | None = None,
    *,
    vectors: Mapping[str, np.ndarray] | None = None,
    summarised: Collection[str] = (),
    open_episodes: Mapping[str, float] | None = None,
    episode_labels: Mapping[str, str] | None = None,
    unshared: Collection[str] = (),
    stored_summaries: Mapping[str, StoredSummary] | None = None,
) -> Plan:
    """Decide what one sleep changes; pure and deterministic.

    ``memories``: every stored memory (only ``active`` ones are acted on).
    ``vectors``: optional embedding per memory id for the near-duplicate rule.
    ``summarised``: ids already linked from a summary (never summarised twice).
    ``open_episodes``: explicit episodes whose ``with`` block has not ended, with
    when each was last written to (its start, if never).
    ``unshared``: :func:`sharing_key` of shared memories that were forgotten: their
    sessions' copies are not shared again.
    ``stored_summaries``: the summaries earlier sleeps made, by id: one quoting a
    value superseded now stops quoting it.

    >>> plan = plan_consolidation(records, now=time.time())
    >>> plan.counts["merged"], len(plan.created)
    (12, 3)
    """
    policy = policy or SleepPolicy()
    plan = Plan()
    state = {m.id: m for m in memories}
    done = set(summarised)
    active = sorted((m for m in memories if m.status == "active"), key=lambda m: (m.created_at, m.id))

    def live() -> list[Record]:
        return [m for m in active if plan.updates.get(m.id, {}).get("status", "active") == "active"]

    def value(m: Record, column: str) -> Any:
        return plan.updates.get(m.id, {}).get(column, getattr(m, column))

    def global_after_sleep(m: Record) -> bool:
        """Whether step 4 makes (or leaves) ``m`` global: important session knowledge."""
        return value(m, "scope") == "global" or (
            policy.promote_importance is not None and m.kind != "summary"
            and value(m, "importance") >= policy.promote_importance
        )

    # 1. expire
    for m in active:
        if m.valid_until is not None and m.valid_until <= now:
            plan.set(m.id, status="expired")
            plan.counts["expired"] += 1

    # 2. supersede: only single-sentence "<subject> is <value>" facts, a session's by
    # its own, a global one by every session's global ones (see ``_holder``). Never a
    # shared fact (it stands for several sessions: none of their later words replace
    # it), and never by or of a fact with an expiry: once it expired, the one it
    # replaced would be nowhere.
    superseded_by: dict[str, str] = {}  # what this sleep supersedes -> the newer value
    if policy.supersede:
        # Per subject: its latest value and every live memory stating it. A new value
        # supersedes them all, or a repeat of the old value would still be current.
        # A fact step 4 promotes supersedes the global values now, not at the next sleep.
        latest: dict[tuple[str, str, str, str], tuple[str, list[Record]]] = {}
        # "The flag is not enabled" replaces "the flag is enabled", and is replaced by
        # it said again: a value and its negation, by value. It says nothing of another
        # value ("the owner is not Bob" beside "the owner is Alice").
        negations: dict[tuple[tuple[str, str, str, str], str], list[Record]] = {}

        def supersede(olds: list[Record], newer: Record) -> None:
            for old in olds:
                if value(old, "status") != "superseded":
                    plan.set(old.id, status="superseded")
                    plan.links.append(Link(newer.id, old.id, "supersedes"))
                    plan.counts["superseded"] += 1
                    superseded_by[old.id] = newer.id

        # A value an earlier sleep consolidated behind a summary is still a value: a
        # newer one supersedes it, or the summary would keep recalling it as current.
        behind_summaries = [m for m in memories if m.status == "consolidated" and m.id in done]
        for m in sorted([*live(), *behind_summaries], key=lambda m: (m.created_at, m.id)):
            if m.kind == "summary" or m.session_id == SHARED_SESSION or m.valid_until is not None:
                continue
            fact = fact_key(m.content)
            if fact is None:
                continue
            # A fact promoted now is a value among its session's and among the global ones.
            promoted = m.status == "active" and m.scope == "session" and global_after_sleep(m)
            scopes = ("session", "global") if promoted else (m.scope,)
            for slot in [(_holder(m.session_id, scope, fact), scope, fact.attribute, fact.kind) for scope in scopes]:
                previous = latest.get(slot)
                if fact.negated:
                    if previous is not None and previous[0] == fact.value:
                        supersede(previous[1], m)
                        del latest[slot]
                    negations.setdefault((slot, fact.value), []).append(m)
                    continue
                supersede(negations.pop((slot, fact.value), []), m)
                if previous is not None and previous[0] == fact.value:
                    previous[1].append(m)
                    continue
                supersede(previous[1] if previous is not None else [], m)
                latest[slot] = (fact.value, [m])

    _unquote_superseded(plan, state, stored_summaries or {}, superseded_by, value)

    # 3. merge near-duplicates into a global member if there is one, else into the
    # earliest. Across sessions only where the policy shares (promote_recurring), and
    # only repeats (the same words in the same order), so no session's other words
    # reach another; with no global member they fold into a new global memory of the
    # shared text: never into one session's own row made global, which would hand
    # its source, metadata and the right to edit it over.
    candidates = [m for m in live() if m.kind != "summary"]
    sharing_keys: dict[str, str] = {}

    def shared_as(m: Record) -> str:
        if m.id not in sharing_keys:
            sharing_keys[m.id] = sharing_key(m.content)
        return sharing_keys[m.id]

    def compatible(a: Record, b: Record) -> bool:
        """Whether ``b`` may merge into the group of ``a`` (which came first)."""
        if a.session_id == b.session_id != SHARED_SESSION:  # shared ones came from several sessions
            return True
        # Across sessions only where the policy shares (promote_recurring): folding one
        # session's copy into another's memory, even a global one, would tell that
        # session what the other wrote privately, and how important it was to it.
        if not policy.promote_recurring:
            return False
        if a.valid_until is not None or b.valid_until is not None:
            return False  # a copy in another's keeping could outlive its valid_until
        if shared_as(a) in unshared:  # forgotten as shared: never folded across sessions again
            return False
        return shared_as(a) == shared_as(b)

    # The vectors of the shared memories groups would make: their text's, the first member's.
    new_vectors: dict[str, np.ndarray] = {}
    readings: dict[str, Reading] = {}  # each text read once, however often it is grouped

    def group(records: Sequence[Record], new: Sequence[bool]) -> list[list[int]]:
        return duplicate_groups(
            [m.id for m in records], [m.content_hash for m in records], [m.content for m in records],
            policy.duplicates, {**vectors, **new_vectors} if vectors and new_vectors else vectors,
            lambda anchor, item: compatible(records[anchor], records[item]),
            kept=lambda i: global_after_sleep(records[i]),
            # Not sharing, each session's memories are grouped on their own: however many
            # other sessions hold a text, a session's own copies find each other.
            part=(lambda i: "") if policy.promote_recurring else (lambda i: records[i].session_id),
            readings=readings, fresh=lambda i: new[i],
        )

    def survivor(members: list[Record]) -> Record:
        """What the next sleep sees of a group: the member it merges into, or the new
        shared memory, with the group's sums."""
        summed = _summed(members)
        canonical = _canonical(members, global_after_sleep)
        if canonical is not None:
            return dataclasses.replace(canonical, **{k: v for k, v in summed.items() if k != "created_at"})
        first = members[0]
        if vectors and first.id in vectors:
            new_vectors[f"shared:{first.id}"] = vectors[first.id]
        return Record(id=f"shared:{first.id}", session_id=SHARED_SESSION, scope="global", kind="fact",
                      status="active", content=first.content, content_hash=first.content_hash, **summed)

    # Settled: the next sleep, seeing what these merges leave, finds nothing to merge,
    # and each group is summed once over all it merges.
    for members in settle(candidates, group, survivor, order=lambda m: (m.created_at, m.id)):
        summed = _summed(members)
        canonical = _canonical(members, global_after_sleep)
        if canonical is None:
            keeper = f"shared:{members[0].id}"
            plan.created.append(NewRecord(
                key=keeper, kind="fact", session_id=SHARED_SESSION, scope="global",
                content=members[0].content, importance=summed["importance"], created_at=summed["created_at"],
                last_seen_at=summed["last_seen_at"], occurrences=summed["occurrences"],
                strength=strength(Record(**{**_fields(members[0]), **summed}), now, policy),
                sources=tuple(m.id for m in members), source_texts=tuple(m.content for m in members),
            ))
            plan.counts["promoted"] += 1
        else:
            keeper = canonical.id
            # Its own time stays: a global copy said later is not moved back to an
            # earlier copy's place in the timeline (another session's, perhaps).
            plan.set(keeper, **{k: v for k, v in summed.items()
                                if k != "created_at" and getattr(canonical, k) != v})
        for m in members:
            if m.id != keeper:
                plan.set(m.id, status="consolidated")
                plan.links.append(Link(keeper, m.id, "merges"))
                plan.counts["merged"] += 1

    # 4. promote important session knowledge
    for m in live():
        if value(m, "scope") == "session" and global_after_sleep(m):
            plan.set(m.id, scope="global")
            plan.counts["promoted"] += 1

    # 5. summarise closed episodes of session events
    # A memory that expires is left out: a summary quoting it would carry its text
    # past its valid_until, and hiding it behind one would keep it from expiring.
    events = [
        m for m in live()
        if m.kind == "episodic" and value(m, "scope") == "session" and m.id not in done and m.valid_until is None
    ]
    labels = episode_labels or {}
    open = open_episodes or {}
    for key, members in split_episodes(events, policy.episode_gap):
        end = members[-1].created_at
        if (
            len(members) < policy.min_episode_size
            or (key in open and open[key] + policy.abandoned_after > now)
            or end + policy.episode_gap > now
            or end + policy.summarise_after > now
        ):
            continue
        # Sources important enough to stay in view speak for themselves: the summary
        # condenses the others, and quoting one that stays would have recall return
        # its text twice. A summary that would hide none of them is not made: all it
        # said, recall finds in the events themselves.
        staying = tuple(m.id for m in members if value(m, "importance") >= policy.keep_importance)
        condensed = [m for m in members if m.id not in staying]
        if not condensed:
            continue
        summary = _summary(key, members, condensed, staying, labels.get(key), policy, now, value)
        hidden = [m for m in condensed
                  if policy.consolidate == "all" or represented(m.content, summary.content, policy)]
        if not hidden:
            continue
        plan.created.append(summary)
        plan.counts["summaries"] += 1
        plan.links.extend(Link(key, m.id, "summarises") for m in members)
        for m in hidden:
            plan.set(m.id, status="consolidated")
            plan.counts["summarised"] += 1

    # 6. decay and reinforce what is still active
    for m in live():
        _decay(plan, m, now, policy)

    # Drop no-op updates so "changed rows" means rows that really change.
    for memory_id in list(plan.updates):
        original = state[memory_id]
        real = {k: v for k, v in plan.updates[memory_id].items() if getattr(original, k) != v}
        if real:
            plan.updates[memory_id] = real
        else:
            del plan.updates[memory_id]
    return plan


def _summed(members: Sequence[Record]) -> dict[str, Any]:
    """What a merge sums over its members: occurrences, the latest sighting, the
    highest importance and the earliest time."""
    return {
        "occurrences": sum(m.occurrences for m in members),
        "last_seen_at": max(m.last_seen_at or m.created_at for m in members),
        "importance": max(m.importance for m in members),
        "created_at": min(m.created_at for m in members),
    }


def _canonical(members: Sequence[Record], goes_global: Callable[[Record], bool]) -> Record | None:
    """The member a group (in time order) merges into: the first one visible to every
    session after this sleep, else the earliest; None where its members are of several
    sessions and none is global: they fold into a new shared memory."""
    kept = next((m for m in members if goes_global(m)), None)
    if kept is None and len({m.session_id for m in members}) > 1:
        return None
    return kept or members[0]


def _holder(session_id: str, scope: str, fact: Fact) -> str:
    """Whose values of ``fact``'s attribute a value stated in ``scope`` competes with:
    a session's private values only with its own (no other session sees them, and a
    private value must not hide a global one), a global value with every session's
    global values (every session sees them all, so all are corrected by the newest),
    but for one of whoever the session speaks for ("my email", "the user's address":
    another session's user is another person, as ``results.newer_first`` reads it)."""
    return "" if scope == "global" and not personal(fact) else session_id


def _unquote_superseded(plan: Plan, state: Mapping[str, Record], summaries: Mapping[str, StoredSummary],
                        superseded_by: Mapping[str, str], value: Any) -> None:
    """Each active summary quoting a value superseded now stops quoting it, as it
    would if that value were edited (:func:`without_quotes_of`); what the shorter
    summary no longer says comes back. One left saying nothing is an older value
    too: superseded, linked, by what superseded the last value it quoted."""
    for summary_id, stored in summaries.items():
        summary = state.get(summary_id)
        sources = [state[s] for s in stored.sources if s in state]
        gone = [m for m in sources if m.id in superseded_by]
        if summary is None or summary.kind != "summary" or value(summary, "status") != "active" or not gone:
            continue
        # A repeat of an old value is superseded with it: no source says it any more.
        others = [m.content for m in sources if value(m, "status") != "superseded"]
        text = summary.content
        for old in gone:
            text = without_quotes_of(text, old.content, others)
        if text == summary.content:
            continue
        plan.bound.append((summary_id, *(m.id for m in gone), *(superseded_by[m.id] for m in gone)))
        if text == NOTHING_LEFT:
            plan.set(summary_id, status="superseded")
            plan.links.append(Link(superseded_by[gone[-1].id], summary_id, "supersedes"))
            plan.counts["superseded"] += 1
            continue
        plan.set(summary_id, content=text)
        for m in sources:
            if value(m, "status") == "consolidated" and not still_stands_for(m.content, text, stored.rule):
                plan.set(m.id, status="active")


def strength(m: Record, now: float, policy: SleepPolicy) -> float:
    """How present a memory still is, in [0, 1], rounded to 0.01.

    Halves every ``half_life_days`` since it was last created, seen or recalled; each
    recall or repeat lengthens the half-life; importance is a floor, so what was
    marked important never fades below it.
    """
    last = max(m.created_at, m.last_seen_at or 0.0, m.last_accessed_at or 0.0)
    half_life = policy.half_life_days * (1 + m.access_count + (m.occurrences - 1))
    age_days = max(0.0, now - last) / DAY
    return round(max(m.importance, 0.5 ** (age_days / half_life)), 2)


def _summary(key: str, members: list[Record], condensed: list[Record], kept: tuple[str, ...],
             label: str | None, policy: SleepPolicy, now: float, value: Any) -> NewRecord:
    """The summary of an episode (``members``) that quotes ``condensed``, those of
    its events that do not stay in view (``kept``), and is as important as they are."""
    start, end = members[0].created_at, members[-1].created_at
    name = f"'{label}'" if label else "episode"
    header = summary_header(name, len(members), start, end)
    texts = tuple(m.content for m in members)
    extract = extractive_summary([m.content for m in condensed], header, policy.summary_max_chars,
                                 policy.summary_max_sentences)
    importance = max(value(m, "importance") for m in condensed)
    record = Record(
        id=key, session_id=members[0].session_id, scope="session", kind="summary", status="active",
        content=extract.text, content_hash="", importance=importance, created_at=start, last_seen_at=end,
    )
    return NewRecord(
        key=key, kind="summary", session_id=members[0].session_id, scope="session", content=extract.text,
        importance=importance, created_at=start, last_seen_at=end,
        strength=strength(record, now, policy), episode_id=key,
        sources=tuple(m.id for m in members), source_texts=texts, label=label, kept=kept,
    )


_RULE_FIELDS = ("consolidate", "min_info_words")


def consolidation_rule(policy: SleepPolicy) -> dict[str, Any]:
    """The fields of ``policy`` that decide which sources a summary stands for, kept
    in each summary's metadata: shortened later, it is judged by its own sleep's rule."""
    return {name: getattr(policy, name) for name in _RULE_FIELDS}


def still_stands_for(source: str, summary: str, rule: object) -> bool:
    """Whether a summary, now reading ``summary``, still stands for ``source`` under
    ``rule`` (a :func:`consolidation_rule`; the defaults if it is not one: a
    summary's metadata can be edited). Fields of older releases' rules are passed over."""
    policy = DEFAULT_POLICY
    if isinstance(rule, Mapping):
        try:
            policy = dataclasses.replace(DEFAULT_POLICY, **{k: v for k, v in rule.items() if k in _RULE_FIELDS})
        except InvalidInputError:
            pass
    return policy.consolidate == "all" or represented(source, summary, policy)


# Where a sentence of a summary ends: a stop and a space, or a line break before a
# list item ("- ", "* ", "• "): a summariser may set its sentences out as a list. Any
# other line break may be wrapping, not the end of a sentence.
_STOP = re.compile(r"(?<=[.!?])\s+|\s*\n\s*(?=[-*•]\s)")
_ITEM = re.compile(r"\A\s*[-*•]\s+")


def represented(content: str, summary: str, policy: SleepPolicy = DEFAULT_POLICY) -> bool:
    """Whether ``summary`` quotes, word for word and as a sentence of its own, every
    sentence of this source that says something: one with ``min_info_words`` words
    that are no stopwords, or a number, day, negation or name written with digits or
    symbols. Quoted, not just holding the same words: "turned on" does not stand for
    "turned off", "Alice owes Bob" for "Bob owes Alice", nor a "not" said elsewhere
    for this one. A whole sentence of the summary: inside a longer one it may be
    what someone claimed ("Bob claimed that Alice approved the budget, but..."), and
    a run of words across two ("...postpone the deploy. Failed checks..." does not
    say "Deploy failed.") is no quote either. Case, spacing and the punctuation
    around words aside; the summary's header (its times) is no quote."""
    said = {tuple(quoted_words(_ITEM.sub("", part))) for part in _STOP.split(split_header(summary)[1])}
    for sentence in split_sentences(content):
        words = quoted_words(sentence)
        informative = {w for w in tokenize(sentence) if w not in STOPWORDS}
        exact = values(sentence) or not all(word.isalpha() for word in words)
        if not exact and sum(_information(w) for w in informative) < policy.min_info_words:
            continue  # "Thanks!", "Wow": says almost nothing
        if tuple(words) not in said:
            return False
    return True


def judge_stored_summaries(
    plan: Plan, contents: Mapping[str, str], memories: Sequence[Record], now: float, policy: SleepPolicy
) -> None:
    """Summaries to be stored with other text than the plan's draft (``contents``, by
    summary key: a summariser's): the sources that text does not represent stay
    active, and decay as the plan's active memories do. Judged on the draft alone, a
    gist would stand for details it never says."""
    if policy.consolidate == "all":
        return
    by_id = {m.id: m for m in memories}
    for summary in plan.created:
        text = contents.get(summary.key)
        if summary.kind != "summary" or text is None:
            continue
        for source, source_text in zip(summary.sources, summary.source_texts, strict=True):
            update = plan.updates.get(source, {})
            if update.get("status") == "consolidated" and not represented(source_text, text, policy):
                del update["status"]
                if not update:
                    del plan.updates[source]
                plan.counts["summarised"] -= 1
                _decay(plan, by_id[source], now, policy)


def _decay(plan: Plan, m: Record, now: float, policy: SleepPolicy) -> None:
    """Plan ``m``'s new strength, if it moved by a step or more."""
    merged = Record(**{**_fields(m), **plan.updates.get(m.id, {})})
    target = strength(merged, now, policy)
    if abs(target - m.strength) >= policy.strength_step:
        plan.set(m.id, strength=target)
        plan.counts["decayed" if target < m.strength else "reinforced"] += 1


# Scripts written without spaces (Han, kana, Thai, Lao, Myanmar, Khmer): a "word" to
# the tokenizer is a whole phrase there.
_UNSPACED = re.compile(r"[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def _information(token: str) -> int:
    """How many words ``token`` counts for: one, or about one per two characters of
    a script without spaces ("鲍勃辞职了", "Bob resigned", is one token)."""
    return max(1, len(token) // 2) if _UNSPACED.search(token) else 1


def _fields(m: Record) -> dict[str, Any]:
    return {name: getattr(m, name) for name in Record.__slots__}


def reachable_from_active(records: Sequence[Record], links: Sequence[tuple[str, str]]) -> set[str]:
    """Ids that are active or reachable from an active memory through links.

    The "nothing is lost" invariant: after any sleep, every memory that is not
    ``expired`` is in this set.
    """
    children: dict[str, list[str]] = defaultdict(list)
    for src, dst in links:
        children[src].append(dst)
    seen = {r.id for r in records if r.status == "active"}
    stack = list(seen)
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in seen:
                seen.add(child)
                stack.append(child)
    return seen


