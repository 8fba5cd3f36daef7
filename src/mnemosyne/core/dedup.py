"""Finding near-duplicates and newer versions of the same fact (pure).

Two memories are near-duplicates when their normalised text is equal, or when they
state the same values (numbers, days, months, negation), say their shared words in
the same order without swapping one word for another (symbols count: "C#" is not
"C++"), and either their word sets overlap almost entirely (Jaccard similarity) or,
when both have embedding vectors, the vectors' cosine similarity is above a
threshold.
Groups are anchored on their earliest member and never chained, so a run of
gradually drifting texts cannot collapse into one memory.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ..errors import InvalidInputError
from .fingerprint import content_hash
from .lexical import STOPWORDS, tokenize
from .validation import finite_number, whole_number


@dataclass(frozen=True, slots=True)
class DupRules:
    jaccard: float = 0.8
    min_tokens: int = 4  # shorter texts only merge when equal after normalising
    cosine: float = 0.95  # MiniLM puts "two kids"/"three kids" at 0.96: values must match too

    def __post_init__(self) -> None:
        for name in ("jaccard", "cosine"):  # not NaN: every comparison would be false, silently
            value = getattr(self, name)
            number = finite_number(value)
            if number is None or not 0 <= number <= 1:
                raise InvalidInputError(f"DupRules.{name} must be from 0 to 1, got {value!r}")
            object.__setattr__(self, name, number)
        min_tokens = whole_number(self.min_tokens)
        if min_tokens is None or min_tokens < 0:
            raise InvalidInputError(f"DupRules.min_tokens must be an integer >= 0, got {self.min_tokens!r}")
        object.__setattr__(self, "min_tokens", min_tokens)


# How many of the latest anchors stating the same values a text is compared with, for
# each word of its prefix. Work stays linear in a huge corpus of near-alike texts; a
# copy whose first anchor is further back merely stays unmerged.
PROBED_ANCHORS = 256


def word_set(text: str) -> frozenset[str]:
    return frozenset(tokenize(text))


# Words that state a value: two texts that differ in one of them say different things
# however alike they read ("two kids" / "three kids", "on Monday" / "on Tuesday").
_NUMBER_WORDS = frozenset(
    """zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen
    fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy
    eighty ninety hundred thousand million billion trillion dozen first second third fourth
    fifth sixth seventh eighth ninth tenth half quarter once twice thrice""".split()
)
_VALUE_WORDS = _NUMBER_WORDS | frozenset(
    """monday tuesday wednesday thursday friday saturday sunday january february march april
    may june july august september october november december yesterday today tomorrow
    not never no none nor nothing nobody neither cannot t
    nicht kein keine keinen keiner keinem nein nie niemals nichts
    non pas jamais rien aucun aucune personne
    nunca nada ningún ninguna ninguno tampoco
    mai nessuno niente nessuna
    não nao nem ne nie niet geen nooit inte nej aldrig ingen ikke aldri ei değil yok hayır
    не нет ни никогда""".split()  # t: "don't" is "don" + "t"
)
# Words a restatement may add before or after what it repeats ("As I said, ...",
# "..., just a reminder"): they add nothing to what it says. Any other word added
# there qualifies it ("Cancelled: ...", "... for the launch cut").
_RESTATING = frozenset(
    """as i we you said say says mentioned noted told earlier before again already reminder
    remember recap repeat repeating confirmed confirming fyi note btw just so ok okay yes
    yeah well anyway also like to that this know""".split()
)
# Restating words that, right next to what is repeated, become part of it: a subject
# or a restriction before it ("I approved ...", "Just the staging server crashed"),
# a time after it ("... sent to accounting before", "... crashed earlier").
_ATTACHED_BEFORE = frozenset("i we you just".split())
_ATTACHED_AFTER = frozenset("before earlier".split())
# Ignored when comparing the words two texts are written with.
_ARTICLES = frozenset({"a", "an", "the"})
# "!" and "?" end a sentence, but a leading "!" is a negation in code: "!user.isAdmin".
_LEADING_PUNCTUATION = ".,;:\"'()[]{}«»‹›“”„‘’‚…¡¿"
_TRAILING_PUNCTUATION = _LEADING_PUNCTUATION + "!?"
_LABEL = re.compile(r"\s*([^\W\d_][\w'-]*(?: [^\W\d_][\w'-]*)?):\s")  # a speaker or a role
_TYPOGRAPHIC = str.maketrans({"’": "'", "‘": "'", "ʼ": "'"})  # "user’s" is "user's"


def written_words(text: str) -> list[str]:
    """The words of ``text`` as written, lower-cased (but those whose case is part of
    them: see ``_folded``), with the punctuation around them dropped and symbols
    inside kept: "C#", "+5", "alice@example.com". Composed
    ("é", not "e" + "´") and with typographic apostrophes made plain, so two ways of
    typing one text are one wording. A leading label ("Caroline: ...", "user: ...")
    is one word ending in ":", apart from what it labels."""
    plain = unicodedata.normalize("NFC", text).translate(_TYPOGRAPHIC)
    label = _LABEL.match(plain)
    if label is None:
        return _words(plain)
    return [label[1].lower() + ":", *_words(plain[label.end():])]


def quoted_words(text: str) -> list[str]:
    """``written_words`` without a label: the words of ``text`` as they read when
    quoted inside another text."""
    return _words(unicodedata.normalize("NFC", text).translate(_TYPOGRAPHIC))


def _words(plain: str) -> list[str]:
    stripped = [word.lstrip(_LEADING_PUNCTUATION).rstrip(_TRAILING_PUNCTUATION) for word in plain.split()]
    return [word for word in map(_folded, stripped) if word]


def _folded(word: str) -> str:
    """``word`` in lower case, unless its case may be what it says (``cased``)."""
    lower = word.lower()
    # Most words are in lower case already, and then either answer is the word.
    return word if lower == word or cased(word) else lower


def cased(word: str) -> bool:
    """Whether ``word``'s case may be what it says: a word holding a digit or a
    capital past its first letter ("Hunter2", "ABCdef", "NASA") is an identifier, a
    secret, a name, and "hunter2" another one."""
    return any(map(str.isdigit, word)) or any(map(str.isupper, word[1:]))


def values(text: str) -> tuple[str, ...]:
    """The words of ``text`` that state numbers, days, months or negation, in order:
    "order 3 ships in 7 days" and "order 7 ships in 3 days" say different things."""
    return _values(tokenize(text))


def _values(tokens: list[str]) -> tuple[str, ...]:
    # A word of letters only holds no digit: most words are asked no more.
    return tuple(w for w in tokens if w in _VALUE_WORDS or (not w.isalpha() and any(map(str.isdigit, w))))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


class Reading(NamedTuple):
    """What the duplicate rules read of a text."""

    words: frozenset[str]  # see word_set
    written: list[str]  # see written_words
    values: tuple[str, ...]
    asking: bool  # see is_question


def reading(text: str) -> Reading:
    """Read ``text`` for the duplicate rules (the costly part of grouping)."""
    tokens = tokenize(text)
    return Reading(frozenset(tokens), written_words(text), _values(tokens), is_question(text))


def duplicate_groups(
    ids: Sequence[str],
    hashes: Sequence[str],
    texts: Sequence[str],
    rules: DupRules,
    vectors: Mapping[str, np.ndarray] | None = None,
    compatible: Callable[[int, int], bool] = lambda anchor, item: True,
    kept: Callable[[int], bool] = lambda item: False,
    part: Callable[[int], str] = lambda item: "",
    readings: MutableMapping[str, Reading] | None = None,
    fresh: Callable[[int], bool] = lambda item: True,
) -> list[list[int]]:
    """Indices grouped by duplication; the input must be in time order.

    Each group's first index is its anchor (the earliest); an item joins the group
    of the earliest anchor it duplicates and that ``compatible(anchor, item)``
    allows. A later member that the group keeps instead of its anchor (``kept``:
    the first such member) is matched like an anchor from then on: an item that
    duplicates only it would do so again at the next sleep, when it is all that is
    left of the group. Items of different ``part`` (sessions that may not share)
    never group, and are looked up apart: no other part's anchors crowd out an
    item's own. Only groups of two or more are returned. ``readings``: texts
    already read, by text, and filled in: grouping them again reads none twice.
    Of two items not ``fresh``, neither repeats the other (they were grouped apart
    before): the vector of one is compared with the fresh ones' only (the costly
    comparison), unless it is kept and joins a group, which it may take others into.
    """
    n = len(ids)
    known: MutableMapping[str, Reading] = {} if readings is None else readings
    for text in texts:
        if text not in known:
            known[text] = reading(text)
    sets = [known[text].words for text in texts]
    written = [known[text].written for text in texts]
    numbers = [known[text].values for text in texts]
    asking = [known[text].asking for text in texts]
    frequency: Counter[str] = Counter()
    for words in sets:
        frequency.update(words)
    unit = _unit_vectors(ids, vectors)
    parts = [part(i) for i in range(n)]
    new = [fresh(i) for i in range(n)]
    # Part, values and freshness -> the anchors with a vector.
    by_meaning: dict[tuple[str, tuple[str, ...], bool], _Anchors] = {}

    # Every word's place in a fixed order, rarest first, sorted once: each text's
    # words are then sorted by a lookup, not by a key built for each word of each text.
    rarest_first = {word: place for place, word in enumerate(sorted(frequency, key=lambda w: (frequency[w], w)))}

    def prefix(words: frozenset[str]) -> list[str]:
        # Prefix filtering: two sets with Jaccard >= t must share one of the first
        # |A| - ceil(t|A|) + 1 words in a fixed (rarest-first) order, so indexing
        # and probing only those finds every match without comparing every pair.
        ordered = sorted(words, key=rarest_first.__getitem__)
        return ordered[: len(words) - math.ceil(rules.jaccard * len(words)) + 1]

    # Part and hash -> the anchors with that hash, and apart the kept copies, which a
    # text too short for the word index ("deploy") finds only here: an anchor that may
    # not take it must not hide a kept copy that may. Probed like the word index, the
    # first and the latest: where every session shares one part, 12,000 sessions'
    # copies of one note, each an anchor of its own, still cost linear time.
    anchors_by_hash: dict[tuple[str, str], list[int]] = defaultdict(list)
    kept_by_hash: dict[tuple[str, str], list[int]] = defaultdict(list)

    def by_hash(found: list[int]) -> list[int]:
        return found[:1] + found[-PROBED_ANCHORS:] if len(found) > PROBED_ANCHORS else found

    # Prefix word -> anchors, apart for each tuple of values: only texts stating the
    # same values can be duplicates, and a corpus of "reading 41 of sensor 7" kinds
    # would otherwise probe every earlier anchor for every text.
    postings: dict[tuple[str, tuple[str, ...], str], list[int]] = defaultdict(list)
    members: dict[int, list[int]] = {}
    group_of: dict[int, int] = {}  # what is matched against (anchors, kept copies) -> its group's anchor
    keeping: set[int] = set()  # groups with a member they keep

    def match_against(i: int, group: int, head: list[tuple[str, tuple[str, ...], str]]) -> None:
        group_of[i] = group
        if group == i:
            anchors_by_hash[parts[i], hashes[i]].append(i)
        if group != i or kept(i):
            kept_by_hash[parts[i], hashes[i]].append(i)
        for key in head:
            postings[key].append(i)
        if i in unit:
            by_meaning.setdefault((parts[i], numbers[i], new[i]), _Anchors()).add(i, unit[i])

    def close_to(i: int, every: bool) -> set[int]:
        """The anchors close in meaning to ``i``: every one, or the fresh ones only."""
        found: set[int] = set()
        for fresh_ones in (True, False) if every else (True,):
            anchors = by_meaning.get((parts[i], numbers[i], fresh_ones))
            if anchors is not None and i in unit:
                found |= anchors.close_to(unit[i], rules.cosine)
        return found

    def repeats(earlier: int, later: int, alike: set[int]) -> bool:
        """Whether ``later`` repeats ``earlier``; ``alike``: the texts close in meaning
        to the one of them being placed."""
        return (hashes[earlier] == hashes[later] and written[earlier] == written[later]) or (
            (earlier in alike or later in alike
             or (numbers[later] == numbers[earlier] and _lexical_duplicate(sets[later], sets[earlier], rules)))
            and asking[earlier] == asking[later]
            and same_wording(written[earlier], written[later])
        )

    for i in range(n):
        own = (parts[i], hashes[i])
        candidates = {*by_hash(anchors_by_hash.get(own, [])), *by_hash(kept_by_hash.get(own, []))}
        lexical = len(sets[i]) >= rules.min_tokens
        head = [(parts[i], numbers[i], word) for word in prefix(sets[i])] if lexical else []
        for key in head:
            candidates.update(postings.get(key, ())[-PROBED_ANCHORS:])
        similar = close_to(i, new[i])
        candidates.update(similar)
        chosen = next((j for j in sorted(candidates) if compatible(j, i) and repeats(j, i, similar)), None)
        if chosen is not None:
            group = group_of[chosen]
            members[group].append(i)
            if group not in keeping and kept(i):
                keeping.add(group)
                match_against(i, group, head)
                if not new[i]:  # it may take in groups below: compared as a fresh one is
                    similar = close_to(i, True)
                    candidates.update(similar)
                # Kept, it stands for the group. A group begun after this one's is
                # merged into it now if its texts all say the kept one again (the
                # kept one as if first), or if its anchor is said again by the kept
                # one: the next sleep, matching the kept copy against the anchors it
                # comes after, would merge that group.
                for j in sorted(candidates):
                    if group < j and j in members and (
                        all(compatible(i, m) and repeats(i, m, similar) for m in members[j])
                        or (compatible(j, i) and repeats(j, i, similar))
                    ):
                        for m in members.pop(j):
                            members[group].append(m)
                            if m in group_of:
                                group_of[m] = group
                        keeping.discard(j)
            continue
        members[i] = [i]
        match_against(i, i, head)
        if kept(i):
            keeping.add(i)
    return [group for group in members.values() if len(group) > 1]


def same_by_words(kept: str, copy: str, rules: DupRules = DupRules()) -> bool:
    """Whether sleep's word rule would merge ``copy`` and ``kept`` (vectors aside),
    whichever of them came first."""
    a, b = word_set(kept), word_set(copy)
    kept_words, copy_words = written_words(kept), written_words(copy)
    if content_hash(kept) == content_hash(copy) and kept_words == copy_words:
        return True
    return (
        len(b) >= rules.min_tokens and values(kept) == values(copy) and _lexical_duplicate(a, b, rules)
        and is_question(kept) == is_question(copy)
        and (same_wording(kept_words, copy_words) or same_wording(copy_words, kept_words))
    )


# What ends a text after its last word: punctuation, quotes, emoji, spaces.
_ENDING = re.compile(r"[\W_]*\Z")


def is_question(text: str) -> bool:
    """Whether ``text`` ends as a question ("...?", "...?!", "...? 🤔"). "We deploy on
    Friday?" is no repeat of "We deploy on Friday.": one asks what the other says
    (punctuation aside, their words are one wording)."""
    ending = _ENDING.search(text)
    return ending is not None and any(mark in ending.group() for mark in "?\uff1f")  # "？" too


def same_wording(earlier: Sequence[str], later: Sequence[str]) -> bool:
    """Whether two texts' written words (see ``written_words``; articles aside) could
    say one thing, the later one saying it again:

    - no word swapped for another ("Carol approved the budget" is not "Alice
      approved the budget", nor "30 seconds" "30 minutes", "before the deploy"
      "after the deploy", "C#" "C++");
    - nothing dropped by the later one (a list that lost an item is news);
    - words added only before or after the whole of the other, and only words that
      say it again ("As I said, ...", after a speaker's label too): one inside it
      qualifies it ("the former team lead", "only on Linux"), and so does any other
      at its ends ("Cancelled: ...", "... as long as they pay monthly"), a symbol
      ("... tonight 🚫", "... ✅"), and a restating word that attaches to it
      ("I approved ...", "Just the ...", "... sent before").

    Vectors alike above 0.95 are mostly texts that differ so little, so this holds
    for them too.
    """
    a = [w for w in earlier if w not in _ARTICLES]
    b = [w for w in later if w not in _ARTICLES]
    if a[:1] == b[:1] and a[:1] and a[0].endswith(":"):  # one speaker: what each says
        a, b = a[1:], b[1:]
    if set(a) - set(b):
        return False
    n = len(a)
    return any(b[i : i + n] == a and _restating(b[:i], b[i + n :]) for i in range(len(b) - n + 1))


def _restating(before: Sequence[str], after: Sequence[str]) -> bool:
    """Whether words added before and after a text only say it again (a label added,
    "Confirmed again: ...", counts by its words; a dash says nothing, but a symbol
    may be a status: "✅", "🚫", "⚠️")."""
    parts = [part for word in [*before, *after] for part in word.rstrip(":").split()]
    if before and before[-1].rstrip(":") in _ATTACHED_BEFORE:
        return False
    if after and after[0] in _ATTACHED_AFTER:
        return False
    return all(part in _RESTATING or all(unicodedata.category(ch).startswith("P") for ch in part)
               for part in parts)


def _lexical_duplicate(a: frozenset[str], b: frozenset[str], rules: DupRules) -> bool:
    """Nearly the same words (the caller also requires the same numbers: "step 3" is
    not "step 4", and the same wording: see ``same_wording``)."""
    if len(a) < rules.min_tokens or len(b) < rules.min_tokens:
        return False
    small, large = sorted((len(a), len(b)))
    if small < rules.jaccard * large:  # size filter: cannot reach the threshold
        return False
    return jaccard(a, b) >= rules.jaccard


def _unit_vectors(ids: Sequence[str], vectors: Mapping[str, np.ndarray] | None) -> dict[int, np.ndarray]:
    """Each item's vector scaled to unit length, by index (items without one left out)."""
    unit: dict[int, np.ndarray] = {}
    for i, memory_id in enumerate(ids):
        if vectors and memory_id in vectors:
            vector = np.asarray(vectors[memory_id], dtype=np.float32)
            norm = float(np.linalg.norm(vector))
            unit[i] = vector / norm if norm else vector
    return unit


class _Anchors:
    """The unit vectors of anchors stating one tuple of values, rows of a matrix that
    grows by doubling: an item is compared with every one of them in one product.
    Anchors only, not every earlier item: keeping each item's earlier neighbours once
    took 143 s and 7.8 GB for 20k recurring events."""

    def __init__(self) -> None:
        self._ids: list[int] = []
        self._rows: np.ndarray | None = None

    def add(self, i: int, vector: np.ndarray) -> None:
        if self._rows is None:
            self._rows = np.empty((16, len(vector)), dtype=np.float32)
        elif len(self._ids) == len(self._rows):
            self._rows = np.concatenate([self._rows, np.empty_like(self._rows)])
        self._rows[len(self._ids)] = vector
        self._ids.append(i)

    def close_to(self, vector: np.ndarray, threshold: float) -> set[int]:
        """The anchors whose cosine to ``vector`` is at least ``threshold``."""
        if self._rows is None or self._rows.shape[1] != len(vector):
            return set()
        similarities = self._rows[: len(self._ids)] @ vector
        return {self._ids[k] for k in np.flatnonzero(similarities >= threshold)}


# -- facts ---------------------------------------------------------------------------

MAX_VALUE_WORDS = 3
# A number may take more words, its unit's: "100 requests per minute", "2 GB of RAM",
# "100 requests per minute per token" are one value each, a number with its unit.
# Only unit words, and "per", "a", "of" between them: "3 steps to rewrite the auth
# service" is a description. (A newer value replaces one with the same unit words
# only, so a longer unit cannot replace another's value.)
MAX_UNIT_WORDS = 6

# "<subject> is <value>" ("is now"; for "changed to" see ``_CHANGED_AFTER``), one
# sentence, after a word that marks a correction. Deliberately narrow: only this
# shape, no other colon (one marks "speaker: text" transcripts), no pronoun subjects.
_FACT = re.compile(
    r"^\s*(?:(?:correction|update|actually)\b[:,]?\s+)?"
    r"(?P<subject>[^\W\d_][\w' -]{1,80}?)\s+(?:is|are)\s+(?:now\s+)?"
    # A dot or colon inside a word does not end the value: "3.12", "ana@mail.com",
    # "stg-01.internal", "https://docs.acme.io", "10:15".
    r"(?P<value>(?:[^.!?;:\n]|(?<=\w)\.(?=\w)|(?<=\w):(?=\w|//)){1,120}?)\s*[.!]?\s*$",
    re.IGNORECASE,
)
# A change done to an attribute states its new value as "is now" does: "<subject>
# moved to <value>", "<subject> was renamed to <value>", "Upgraded <subject> to
# <value>", "We switched <subject> from <old> to <value>". Past tense only (a plan,
# "we will move to", is no change; "changed to" is read as "is" is, above), one
# sentence, no question.
CHANGE_VERBS = r"(?:moved|migrated|switched|upgraded|downgraded|renamed|changed)"
_SUBJECT = r"(?P<subject>[^\W\d_][\w' -]{1,80}?)"
_TO_VALUE = (
    r"(?:\s+from\s+(?:[^.!?;:\n]|(?<=\w)\.(?=\w)){1,80}?)?\s+to\s+"
    r"(?P<value>(?:[^.!?;:\n]|(?<=\w)\.(?=\w)|(?<=\w):(?=\w|//)){1,120}?)\s*[.!]?\s*$"
)
_CHANGED_AFTER = re.compile(
    r"^\s*(?:(?:correction|update|actually)\b[:,]?\s+)?" + _SUBJECT
    + r"\s+(?:(?:has|have)\s+)?(?:(?:been|was|were|got)\s+)?" + CHANGE_VERBS + _TO_VALUE,
    re.IGNORECASE,
)
_CHANGED_BEFORE = re.compile(
    r"^\s*(?:(?:correction|update|actually)\b[:,]?\s+)?(?:(?:we|i)\s+(?:have\s+)?)?" + CHANGE_VERBS
    + r"\s+" + _SUBJECT + _TO_VALUE,
    re.IGNORECASE,
)
# Words in what reads as the subject of a change that say it was not done, or not
# yet: "The CI has not moved", "The CI will be moved", "The CI should be switched".
_NOT_DONE = frozenset(
    """not never no nor will would shall should could can may might must to be being do does did
    has have had is are isn't aren't hasn't haven't hadn't didn't doesn't don't won't wouldn't can't
    cannot couldn't shouldn't""".split()
)
# When a change took effect, said after its value: "... to Postgres 16 last week",
# "... to 59 USD from November 1", "... on Monday". Not part of the value.
_WHEN_CHANGED = re.compile(
    r"\s+(?:(?:last|this)\s+(?:week|month|year|quarter|weekend|monday|tuesday|wednesday|thursday|friday"
    r"|saturday|sunday)|(?:yesterday|today)"
    r"|(?:on|in|from|since|as\s+of|starting|effective)\s+(?:(?:monday|tuesday|wednesday|thursday|friday"
    r"|saturday|sunday|jan\w*|feb\w*|mar\w*|apr\w*|may|jun\w*|jul\w*|aug\w*|sep\w*|oct\w*|nov\w*|dec\w*)"
    r"(?:\s+\d{1,2}(?:st|nd|rd|th)?)?(?:,?\s+\d{4})?|\d{4}-\d{2}-\d{2}))$",
    re.IGNORECASE,
)
_VAGUE_SUBJECT = frozenset(
    "i you he she it we they this that these those there here what who which how why where "
    "when everything something nothing someone everyone his her its their".split()
)
_NOT_A_VALUE = frozenset("not also too never still a an one just".split())
# A value that starts with one of these says where, when or with what the subject is:
# "at 10am" and "in room 4" are two facts about a meeting; "in Frankfurt" and "in
# Dublin", one fact and its newer value.
_RELATIONS = frozenset(
    "at in on to from for with by of under over near inside outside out off into onto behind above "
    "below between across through about".split()
)
_CLAUSE = frozenset("that which who whose where when".split())
# A subject holding one of these anywhere is a condition ("the bug appears only when
# the user"): a value of it is no value of one named attribute.
_CONDITION = frozenset("if unless when while whether".split())
# Points in time a value may name ("on Friday", "in May", "at noon", "at 10am", "next
# week", "Q3"): such a value is when, not where or what. A period counts only
# without a number ("two weeks" is a length).
_WHEN = frozenset(
    """monday tuesday wednesday thursday friday saturday sunday january february march april
    may june july august september october november december today tomorrow yesterday
    tonight morning afternoon evening night noon midnight weekend""".split()
)
_PERIODS = frozenset("week month year quarter".split())
# A clock time ("10am", "9:30", "14:00"), a date or a quarter. Not an address's port
# ("10.0.0.5:80") nor a time with seconds ("12:34:56", more like a count or an id).
_CLOCK = re.compile(
    r"\b\d{1,2}(?::\d{2})?\s*(?:am|pm)\b|(?<![\d.:])\b(?:[01]?\d|2[0-3]):[0-5]\d\b(?!:)"
    r"|\b\d{4}-\d{2}-\d{2}\b|\bq[1-4]\b",
    re.IGNORECASE,
)
# Unit words that say no more than the number's symbol would ("40 dollars", "$45"),
# and ways of saying "per" ("1200 a month", "1300 per month").
_SYMBOL_UNITS = frozenset("dollar dollars usd euro euros eur pound pounds gbp percent pct".split())
_PER = frozenset("a an per each every".split())
_VERBS = frozenset("is are was were".split())
_NAME = re.compile(r"[A-Z][a-z][\w'-]*")  # "Alice", "Bob's": not "CEO", not "phone"


class Fact(NamedTuple):
    attribute: str  # the subject's words but articles, and a relation ("meeting at")
    kind: str  # what the value is: when, a number (with its unit), or what
    value: str
    negated: bool = False  # "the flag is not enabled": the value does not hold


# Words that make an attribute one of whoever a session speaks for ("my address",
# "the user's timezone", "the customer's plan"): another session's is another's.
_PERSONAL = frozenset("i me my mine we us our ours you your yours user users customer customers client".split())


def personal(fact: Fact) -> bool:
    """Whether ``fact`` is of whoever the session that wrote it speaks for: two
    sessions' "my email" are two people's, even said globally.

    >>> personal(fact_key("My email is ana@mail.com")), personal(fact_key("The API rate limit is 300"))
    (True, False)
    """
    return not _PERSONAL.isdisjoint(fact.attribute.split())


_NEGATED = re.compile(r"not\s+", re.IGNORECASE)
# What a correction says after the value: a second clause, after a semicolon or a
# dash ("...is now Priya; Tom moved to the data team"), or an aside in brackets that
# says what happened ("(staging-1 was decommissioned)", "(raised by finance on Nov
# 16)"). The fact is the first clause. A bracket that qualifies the value stays part
# of it: "(per user)", "(excluding VAT)", "(beta)".
_SECOND_CLAUSE = (";", " \u2013 ", " \u2014 ")
_BRACKETS = re.compile(r"\(([^()]*)\)")
# A first clause longer than this is no one short fact, asides or not: its brackets
# are not read (work stays bounded on a long text).
_LONGEST_ASIDES = 1_000
# Words that make a bracket an aside (a clause: "was decommissioned", "since May"),
# besides a past participle of two letters or more before "-ed". Not those that
# qualify a value ("VAT included").
_ASIDE_WORDS = frozenset("was were is are has have had been since previously formerly replaces replaced".split())
_QUALIFYING = frozenset("included excluded estimated based".split())
# Said with a negation, these only tell when it stopped or starts: "not enabled yet"
# is a value "enabled" that does not hold.
_UNTIL_NOW = frozenset({"yet", "anymore"})


def fact_key(text: str) -> Fact | None:
    """The fact ``text`` states about a named attribute, if it states one:
    ``attribute`` holds every word of the subject but articles ("my birthday" is not
    "our birthday", "price before tax" not "price after tax") and the relation a
    value starts with ("meeting at"); a newer value replaces an older one of the
    same attribute and kind.

    >>> fact_key("The plan is: ship it")   # what follows a colon is not a value
    >>> fact_key("The deploy window is Friday evening.")
    Fact(attribute='deploy window', kind='when', value='friday evening', negated=False)
    >>> fact_key("The beta flag is not enabled.")
    Fact(attribute='beta flag', kind='what', value='enabled', negated=True)
    >>> fact_key("Alice is on vacation.")   # a person, not an attribute: described, not valued
    """
    clause = _first_clause(text.translate(_TYPOGRAPHIC))  # "the user’s name" is "the user's name"
    match = _FACT.match(clause)
    if match is None:
        return _change(clause)
    return _read(match["subject"], match["value"])


def _change(clause: str) -> Fact | None:
    """The new value a change of an attribute states ("The billing service moved to
    Postgres 16", "Switched the CI from Jenkins to GitHub Actions", "The repo was
    renamed to ledger"), as "<subject> is now <value>" would: only a change done, of
    a subject named, to one value (see ``_CHANGED``).

    >>> _change("Upgraded the payments service to Python 3.12 last week")
    Fact(attribute='payments service', kind='number python', value='python 3 12', negated=False)
    >>> _change("We will move the CI to GitHub Actions.")   # a plan, not a change
    """
    match = _CHANGED_AFTER.match(clause) or _CHANGED_BEFORE.match(clause)
    if match is None:
        return None
    if _NOT_DONE.intersection(word.lower() for word in match["subject"].split()):
        return None  # "The CI has not moved to ...", "The CI will be moved to ..."
    return _read(match["subject"], _WHEN_CHANGED.sub("", match["value"]))


def _read(written_subject: str, written_value: str) -> Fact | None:
    """The fact of a subject and a value as written, if they make one."""
    negation = _NEGATED.match(written_value)
    said = written_value[negation.end():] if negation else written_value
    subject = [word for word in tokenize(written_subject) if word not in _ARTICLES]
    value = [word for word in tokenize(said) if not (negation and word in _UNTIL_NOW)]
    if not subject or not value or subject[0] in _VAGUE_SUBJECT or _describes(said):
        return None
    if subject[-1] in _CLAUSE or _CONDITION.intersection(subject) or _VERBS.intersection(value):
        return None  # "The service that is down is auth.", "... only when the user is ..."
    written = [word for word in written_subject.split() if word.lower() not in _ARTICLES]
    # A value is a few words ("Friday evening", "Bo", "offline"). A longer one is a
    # description, and another description of the same subject ("Dana is allergic to
    # peanuts" after "Dana is the on-call engineer this week") is a second fact, not
    # a newer value of the first. So is anything but a number said of a subject
    # that reads as a name: "Alice is on vacation" does not replace "Alice is the
    # tech lead". (A capital starts every sentence: "Budget is 5000" is a fact, and
    # so is "Alice is 34".)
    named = all(_NAME.fullmatch(word) for word in written)
    # Words as written: an address or a link is one ("ana@mail.com", three tokens).
    if not _few_words(said) or (named and not any(c.isdigit() for c in said)):
        return None
    relation = [value[0]] if value[0] in _RELATIONS else []
    return Fact(" ".join(subject + relation), _kind_of_value(said, value), " ".join(value), negation is not None)


def _first_clause(text: str) -> str:
    """``text`` without what it says after the fact it states (see ``_SECOND_CLAUSE``).

    >>> _first_clause("The host is now stg-2 (stg-1 was decommissioned); ask Dana.")
    'The host is now stg-2'
    >>> _first_clause("The price is 59 USD (excluding VAT).")
    'The price is 59 USD (excluding VAT).'
    >>> fact_key("The host is stg-1 (see the runbook; ask Dana).")  # the bracket says no clause
    """
    ends = [end for end in map(text.find, _SECOND_CLAUSE) if end >= 0]
    first = text[: min(ends)].rstrip() if ends else text
    if first.count("(") != first.count(")"):  # "(see the runbook; ask Dana)": inside an aside
        return text
    if len(first) > _LONGEST_ASIDES or "(" not in first:
        return first
    kept, start = [], 0
    for bracket in _BRACKETS.finditer(first):
        if _aside(bracket[1]):
            kept.append(first[start : bracket.start()].rstrip())
            start = bracket.end()
    return "".join(kept) + first[start:] if kept else first


def _aside(bracketed: str) -> bool:
    """Whether what a bracket holds is a clause of its own, not a word on the value."""
    words = [word.strip(_TRAILING_PUNCTUATION).lower() for word in bracketed.split()]
    return len(words) > 1 and any(
        word in _ASIDE_WORDS or (word.endswith("ed") and len(word) > 4 and word not in _QUALIFYING)
        for word in words
    )


def _few_words(value: str) -> bool:
    """Whether ``value`` (as written) is short enough to be a value: a few words, or
    a number and the words of its unit ("100 requests per minute").

    >>> _few_words("100 requests per minute"), _few_words("3 steps to rewrite the service")
    (True, False)
    """
    words = value.split()
    if len(words) <= MAX_VALUE_WORDS:
        return True
    number, *units = [word.strip(_TRAILING_PUNCTUATION).lower() for word in words]
    return (
        (any(ch.isdigit() for ch in number) or number in _NUMBER_WORDS)
        and len(units) <= MAX_UNIT_WORDS
        and all(word.isalpha() and (word not in STOPWORDS or word in _PER | {"of"}) for word in units)
    )


def _describes(value: str) -> bool:
    """Whether what follows "is" starts a description rather than a value: "not
    ready", "still open", "a mess". The first word as written: "a@x.com" and "A-12"
    are values, and so is a lone "A" (a blood type, a grade)."""
    words = value.split()
    first = words[0].strip(_LEADING_PUNCTUATION).lower()
    return first in _NOT_A_VALUE and (len(words) > 1 or first not in _ARTICLES | {"one"})


def _kind_of_value(written: str, value: Sequence[str]) -> str:
    """What a value is: a newer value replaces an older one of the same kind only.
    "on Friday" is when a party is, "on the rooftop" where; "Tom and Anna" names
    kids, "5 and 7" ages them; "100 per minute" and "5000 per day" are two limits
    (a number's unit words count, but not those a symbol says: "$45", "45 dollars")."""
    if _CLOCK.search(written) or _WHEN.intersection(value):
        return "when"
    # Words as written: "B-12" is one number, with no unit "b"; "100/min" is 100 a minute.
    words = [part for word in quoted_words(written) for part in word.split("/") if part]
    numeric = [any(ch.isdigit() for ch in word) or (word in _NUMBER_WORDS and word not in _PERIODS) for word in words]
    if any(numeric):
        units = ["per" if word in _PER else word for word, number in zip(words, numeric, strict=True)
                 if not number and word not in _SYMBOL_UNITS and word != "the"]
        return " ".join(["number", *units])
    return "when" if _PERIODS.intersection(value) else "what"
