"""Turning free user text into a safe FTS5 query.

User text never reaches FTS5 syntax: it is split into word tokens, each token is
quoted, and the tokens are OR-ed so BM25 ranks by how many (and how rare) of them
a memory contains. Quotes, ``*``, ``-``, ``NEAR``, ``AND`` and SQL fragments are
therefore just text. CJK text and emoji become the terms the indexes hold for them
(see ``core/cjk.py``).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Collection, Iterable, Mapping, Sequence

from . import cjk

# What FTS5's unicode61 tokenizer calls a token character: letters, digits,
# combining marks and private-use characters (not "_", not punctuation). Matching
# its notion keeps query and index aligned.
_TOKEN = re.compile(
    r"(?:[^\W_]|[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f\ue000-\uf8ff])+"
)

# ASCII characters that are not letters or digits: separators for FTS5's unicode61.
_ASCII_SEPARATORS = re.compile(r"[\x00-\x2f\x3a-\x40\x5b-\x60\x7b-\x7f]+")

STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been
    before being below between both but by can cannot could did do does doing down during
    each few for from further had has have having he her here hers herself him himself his
    how i if in into is it its itself just let me more most my myself no nor not of off on
    once only or other ought our ours ourselves out over own same she should so some such
    than that the their theirs them themselves then there these they this those through to
    too under until up very was we were what when where which while who whom why will with
    would you your yours yourself yourselves s t d ll m re ve also might may get got kind
    sort likely""".split()
)

# Words that give a question its shape rather than its topic ("how many times did I
# mention..."). Dropping them lifted LongMemEval turn recall by 0.03-0.04 and left
# LoCoMo unchanged.
QUESTION_WORDS = frozenset(
    """many much order earliest latest first recently recent previous previously conversation
    remind mentioned mention total past last ago tell know think""".split()
)

# Chat memories are often stored with source "user" or "assistant": a question in
# the first person is about what the user said, one in the second person about what
# the assistant said.
_FIRST_PERSON = frozenset({"i", "me", "my", "mine", "myself"})
_SECOND_PERSON = frozenset({"you", "your", "yours", "yourself"})

# Words that ask for what a source said rather than about a topic: "what did ci-bot
# say", "messages from the user", "anything the monitor reported".
SPEECH_WORDS = frozenset(
    """say says said saying tell tells told report reports reported write writes wrote written post posts
    posted message messages note notes ask asks asked reply replies replied send sends sent mention mentions
    mentioned anything everything""".split()
)
# The pronouns that say something as its subject ("what did I say", "what you told
# me"), the verbs they say it with, and the words that may come between ("what did
# you just say").
_SPEAKING_ROLES = {"i": "user", "you": "assistant"}
_SAYING = SPEECH_WORDS - {"message", "messages", "anything", "everything"}
_BY_THE_WAY = frozenset({"just", "ever", "already", "also", "actually", "really", "last", "first", "then", "once",
                         "never", "not", "earlier", "previously", "recently",
                         "have", "has", "had", "ve", "d"})  # "what I have said", "what I've said", "you'd said"
# After these a pronoun is spoken to ("what was I told", "were you asked") or is one
# of several who spoke ("what did Sam and I say").
_NOT_SPEAKING_AFTER = frozenset({"was", "were", "am", "is", "are", "be", "been", "being", "get", "gets", "got",
                                 "getting", "and", "or", "nor"})
# A question asking where, when, why, how or who asks about something a source said,
# not for all it said: "where was John in August", "when did ci-bot report".
_ABOUT_WHAT_WAS_SAID = frozenset({"where", "when", "why", "how", "who", "whom", "whose", "while"})

# A store's sources, each with its words, under its first word (see ``index_sources``).
SourceIndex = Mapping[str, Sequence[tuple[str, frozenset[str]]]]


# Below this many memories every term is cheap to score; above, common terms only
# score the memories that rarer terms find (see fts_queries).
COMMON_TERMS_FROM = 5_000
POSTINGS_BUDGET = 500
# Measured at 100k memories: past this many memories scored twice, ``(rare)`` costs
# more than ``(rare) NOT (common)`` (see fts_queries).
SCORED_TWICE_BUDGET = 2_500
# Scoring memories found otherwise reads every posting of the query's terms: past
# this many (about half a millisecond at 100k memories), they are not scored again
# (see scored_again). In a memory of 46,500 turns (``bench/scale.py``, with the local
# model) scoring them lifted turn recall@10 from 0.508 to 0.527; a budget of 10,000
# found no more, and 2,500 found 0.513.
SCORING_BUDGET = 5_000


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens of ``text``, in order (composed form: "é", not "e"+"´")."""
    return [token.lower() for token in _TOKEN.findall(unicodedata.normalize("NFC", text))]


def may_share_stem(word: str, term: str) -> bool:
    """Whether the index could match ``word`` (a token of a text, lower case) with
    ``term``. False is sure: the Porter stemmer only rewrites endings, and keeps a
    word's first letter ("eyed" and "eies" both become "ei"). Outside ASCII nothing
    is ruled out (the index folds letters that this does not)."""
    if not (word.isascii() and term.isascii()):
        return True
    return word[:1] == term[:1]


def ascii_words(text: str) -> set[str]:
    """``text``'s words as the index splits them where it is plain ASCII (lower case):
    every other ASCII character separates. A word with any other character in it
    stays whole, for the index to judge: its tokenizer counts some symbols (newer
    emoji) as letters ("thanks🙂" is one token)."""
    return {word for word in _ASCII_SEPARATORS.split(text.lower()) if word}


def search_tokens(text: str) -> list[str]:
    """``text``'s terms as the indexes hold them: its word tokens, with each CJK run
    and emoji split as ``core/cjk.py`` splits it (plain text: ``tokenize(text)``)."""
    if not cjk.holds(text):
        return tokenize(text)
    return [term for part, apart in cjk.split(text) for term in (cjk.terms(part) if apart else tokenize(part))]


def query_terms(text: str) -> list[str]:
    """Distinct topic terms: stopwords and question-shape words dropped, unless
    nothing else is left."""
    tokens = list(dict.fromkeys(search_tokens(text)))
    return topic_words(tokens) or tokens


def topic_words(tokens: Iterable[str]) -> list[str]:
    """``tokens`` but stopwords and question-shape words."""
    return [t for t in tokens if t not in STOPWORDS and t not in QUESTION_WORDS]


def query_phrases(text: str) -> list[str]:
    """Each word of ``text`` (between spaces) that the index splits into several
    tokens, as the phrase of those tokens: "v1.7.7" as "v1 7 7", and "10.0.0.5",
    "main.scss", "foo_bar", "2026-04-09", "e-mail". A version number is searched as
    written both ways: "1.7.7" as "1 7 7" and "v1 7 7".

    Its tokens alone say little: v1.7.11 holds "v1" and "7" too, and a word's tokens
    count once in a query. The phrase matches the word itself, and BM25 weighs a
    rare phrase high. A word splitting off only stopwords ("Priya's", "don't") is no
    phrase: it means what its one token does.
    """
    phrases = (
        (tokenize(form), form is not word) for word in text.split() for form in _written_forms(word)
    )
    # Another way of writing the word is searched even as one token ("PAY482").
    return list(dict.fromkeys(
        " ".join(tokens) for tokens, other in phrases
        if tokens and (other or sum(token not in STOPWORDS for token in tokens) > 1)
    ))


# A version number, written with or without its "v" ("2.4.0", "v2.4"; not an address).
_VERSION = re.compile(r"[vV]?(\d+\.\d+(?:\.\d+)?)")
# A ticket or model name, written with or without its hyphen ("PAY-482", "PAY482").
_CODE = re.compile(r"([A-Za-z]{2,})-?(\d+)")


def _written_forms(word: str) -> tuple[str, ...]:
    """``word``, and the other way it is written where it is a version number ("2.4.0"
    and "v2.4.0" name one release) or a code ("PAY-482" and "PAY482" one ticket):
    the index splits the two into other tokens."""
    bare_word = word.strip(".,;:!?()[]\"'")
    version = _VERSION.fullmatch(bare_word)
    if version is not None:
        bare = version.group(1)
        return (word, "v" + bare if word.lstrip("(['\"")[:1] not in "vV" else bare)
    code = _CODE.fullmatch(bare_word)
    if code is not None:
        letters, digits = code.groups()
        joined = letters + digits
        return (word, f"{letters}-{digits}" if bare_word == joined else joined)
    return (word,)


# Words an answer is written in that its question does not use: an age ("how old
# was I when Alex was born" ... "I just turned 32", "someone my age"), a duration
# ("how long have I been working here" ... "3 years and 9 months"). Measured
# (``bench/retrieval.py``): LoCoMo R@5 0.722 -> 0.725 and MRR@10 0.601 -> 0.605 on
# its 18 questions of "how long", none of them looked at; LongMemEval session recall
# 0.939 -> 0.959, from the two questions the words were chosen on. Weeks, days and
# hours as well lost two of those gains: they are in many memories, and a week is
# seldom how long a life's facts last.
_ANSWER_WORDS = (
    (re.compile(r"\bhow\s+old\b"), ("age", "turned")),
    (re.compile(r"\bhow\s+long\b"), ("years", "months")),
)


def answer_words(text: str) -> list[str]:
    """The words an answer to ``text`` is likely written in that a question of its
    shape does not use (see ``_ANSWER_WORDS``).

    >>> answer_words("How old was I when Alex was born?"), answer_words("where is it")
    (['age', 'turned'], [])
    """
    lowered = text.lower()
    return [word for shape, words in _ANSWER_WORDS if shape.search(lowered) for word in words]


def search_terms(text: str) -> list[str]:
    """What a query looks for in the text index: its topic terms, then its phrases
    (see :func:`query_phrases`), each quoted alike in an FTS5 query."""
    return [*query_terms(text), *query_phrases(text)]


def source_terms(text: str, pronouns: bool = True) -> set[str]:
    """Terms that can name a memory's source: the topic terms plus (with ``pronouns``)
    the chat role a pronoun points at."""
    tokens = set(tokenize(text))
    terms = set(query_terms(text))
    if not pronouns:
        return terms
    if tokens & _FIRST_PERSON:
        terms.add("user")
    if tokens & _SECOND_PERSON:
        terms.add("assistant")
    return terms


def role_left_out(text: str) -> str | None:
    """The chat role a query's pronouns leave out where they point at the other one
    alone: "assistant" for "how many games have I played" ("I", "my"... and no
    "you"), "user" for "what did you suggest"; None with both ("can you remind me")
    or neither."""
    tokens = set(tokenize(text))
    first, second = not tokens.isdisjoint(_FIRST_PERSON), not tokens.isdisjoint(_SECOND_PERSON)
    if first == second:
        return None
    return "assistant" if first else "user"


# "The user" asked of in the third person, and the user's own words for it.
_THE_USER = re.compile(
    r"(?<![\w-])(?:(?P<verb>does|did|is|was|has)\s+the\s+user|(?P<after>to|for|with|about|from|by|of)\s+the\s+user"
    r"|(?:the\s+)?user['’]s|the\s+user)\b(?!['’])",
    re.IGNORECASE,
)
_FIRST_PERSON_VERB = {"does": "do I", "did": "did I", "is": "am I", "was": "was I", "has": "have I"}


def as_the_user_says(text: str) -> str | None:
    """``text`` with "the user" in the first person, as the user's own turns put it
    ("what job does the user have" → "what job do I have"); None where it does not
    speak of "the user". With the bundled model "I work as a nurse." scores 0.29 to
    the first and 0.49 to the second."""

    def first_person(match: re.Match[str]) -> str:
        if match["verb"]:
            return _FIRST_PERSON_VERB[match["verb"].lower()]
        if match["after"]:
            return f"{match['after']} me"
        return "my" if match[0][-1] == "s" else "I"

    said = _THE_USER.sub(first_person, text)
    return None if said == text else said


def in_person(text: str) -> bool:
    """Whether ``text`` speaks of the user or the assistant: holds "I", "me", "you",
    "your"..."""
    return not (_FIRST_PERSON | _SECOND_PERSON).isdisjoint(tokenize(text))


def chat_role(text: str) -> str | None:
    """The chat role a query names as the one who spoke: "user" when "I" is what
    says ("what did I say", "what I told you"), "assistant" when "you" is ("what
    did you tell me"). None when neither speaks, or both do, or with others ("what
    did you and I say", "what did Sam and I say"); a pronoun spoken to or of names
    no one ("what was I told", "messages for me", "what did they tell me", and "my
    messages", which may be the ones received).

    >>> chat_role("what did you tell me")
    'assistant'
    """
    tokens = tokenize(text)
    speakers: set[str] = set()
    for at, token in enumerate(tokens):
        role = _SPEAKING_ROLES.get(token)
        if role is None or (at and tokens[at - 1] in _NOT_SPEAKING_AFTER):
            continue
        verb = next((later for later in tokens[at + 1:] if later not in _BY_THE_WAY), None)
        if verb in _SAYING:
            speakers.add(role)
    return speakers.pop() if len(speakers) == 1 else None


def index_sources(sources: Iterable[str]) -> SourceIndex:
    """Each of ``sources`` with its words, under its first word: a text naming a
    source holds all of them, the first among them. Sources without a word are left
    out."""
    index: dict[str, list[tuple[str, frozenset[str]]]] = {}
    for source in sources:
        if words := tokenize(source):
            index.setdefault(words[0], []).append((source, frozenset(words)))
    return index


def named_sources(text: str, index: SourceIndex) -> list[str]:
    """The sources of ``index`` that ``text`` names, sorted: it holds every word of
    theirs, and one of them is a topic word (a query holding "I" names no source
    "I", nor one asking about "the last conversation" the source "conversation")."""
    tokens = set(tokenize(text))
    return sorted(
        source
        for token in tokens
        for source, words in index.get(token, ())
        if words <= tokens and topic_words(words)
    )


def outermost(sources: Collection[str]) -> list[str]:
    """``sources`` without those whose words are all in another's: a query saying
    "ci-bot" names the source "ci-bot", not the source "bot" inside it."""
    words = {source: frozenset(tokenize(source)) for source in sources}
    return [source for source in sources if not any(words[source] < others for others in words.values())]


def asked_besides(text: str, sources: Collection[str]) -> list[str] | None:
    """What a query naming ``sources`` asks about besides what they said: its topic
    words that are neither their words nor words of speech ("arm64" in "what did
    ci-bot say about arm64"); empty when it asks for nothing else. None when it asks
    where, when, why, how or who: about something they said, not for all of it."""
    tokens = list(dict.fromkeys(tokenize(text)))
    if _ABOUT_WHAT_WAS_SAID.intersection(tokens):
        return None
    named = {word for source in sources for word in tokenize(source)}
    return [t for t in topic_words(tokens) if t not in named and t not in SPEECH_WORDS]


def asks_for_what_was_said(text: str, sources: Collection[str]) -> bool:
    """Whether a query naming ``sources`` asks for what they said: in a word of
    speech ("what did ci-bot say", "messages from the user"), or by naming nothing
    else ("ci-bot", "the user"). "What is my email" names the source "email" but asks
    about an address."""
    tokens = set(tokenize(text))
    named = {word for source in sources for word in tokenize(source)}
    return bool(tokens & SPEECH_WORDS) or tokens <= named | {"a", "an", "the"}


def speech_only(source: str) -> bool:
    """Whether every word of ``source`` is a word of speech ("notes", "messages"):
    beside another source, such a word says what that one said ("notes from
    ci-bot")."""
    return set(tokenize(source)) <= SPEECH_WORDS


def fts_query(text: str) -> str | None:
    """An FTS5 MATCH expression for ``text``, or None when it has no searchable words."""
    return fts_expression(search_terms(text))


def fts_expression(terms: Sequence[str]) -> str | None:
    """OR of quoted terms (tokens hold no quotes, so quoting makes any term inert; a
    term of several tokens is a phrase)."""
    if not terms:
        return None
    return " OR ".join(f'"{term}"' for term in terms)


def held_terms(terms: Sequence[str], frequencies: Mapping[str, int], in_windows: bool = False) -> list[str]:
    """``terms`` without those no memory holds (counted 0 in ``frequencies``; a term
    not counted stays): what searching and scoring a field need of a query.

    A term no memory holds adds nothing to any memory's BM25, but FTS5 still reads
    it, and scores every phrase of the query for each match: a pasted stack trace
    of 343 distinct terms, one of them held, cost 216-254 ms at 100k memories. With
    ``in_windows`` (episode context windows, one event's text after another's) a
    phrase stays unless one of its words is held nowhere: it may run from the end
    of one event into the next.

    >>> held_terms(["deploy", "xyzzy", "deploy xyzzy", "v2 4"], {"deploy": 40, "xyzzy": 0, "deploy xyzzy": 0,
    ...                                                           "v2 4": 0}, in_windows=True)
    ['deploy', 'v2 4']
    """
    def held(term: str) -> bool:
        if frequencies.get(term, 1):
            return True
        words = term.split(" ")
        return in_windows and len(words) > 1 and all(frequencies.get(word, 1) for word in words)

    return [term for term in terms if held(term)]


def fts_queries(terms: Sequence[str], frequencies: Mapping[str, int], total: int) -> list[str]:
    """The FTS5 queries that together score ``terms``: each match's BM25 is its best
    score over them.

    FTS5 scores every memory that holds any query term, so a common term makes a
    search cost as much as the index is large (measured: one term in 30% of 100k
    memories, over 100 ms). Past ``COMMON_TERMS_FROM`` memories the rarest terms,
    up to ``POSTINGS_BUDGET`` index postings, find the candidates, and the common
    terms only score them: in ``(rare) AND (common)`` FTS5 seeks the common terms'
    postings just for memories holding a rare term, and its BM25 sums every term of
    the query. ``(rare)`` alone scores the memories holding no common term exactly
    and the others lower (BM25 adds a positive amount per term present), so the
    best of the two scores is the whole query's BM25 for every memory holding a
    rare term, and the two queries' first N together hold the whole query's first
    N. One that holds only common terms is left to the other signals.

    ``(rare)`` scores a memory holding both kinds twice. ``(rare) NOT (common)``
    would not, but costs about a millisecond more at 100k memories: FTS5 checks
    every match against the common terms, and its BM25 weighs them too, walking
    all their postings. So it is used only when more than ``SCORED_TWICE_BUDGET``
    memories would be scored twice (the rarest term alone has many postings, and
    the common terms are very common). In a
    46k-turn memory (``bench/scale.py``, lexical only) this found turn recall@10
    0.49 with a budget of 500 (13.8 ms of CPU per recall) and 0.52 with 2,000
    (19.2 ms), against 0.54 with every term searched (51.6 ms). With the local
    model's vectors as well, 500 and 2,000 found 0.50 and 0.51.
    """
    rare, common = _split(terms, frequencies, total)
    either, also = fts_expression(rare), fts_expression(common)
    if either is None or also is None:
        return [] if either is None else [either]
    # How many memories holding a rare term likely hold a common one too.
    twice = sum(frequencies.get(term, 0) for term in rare) * (
        1 - math.prod(1 - min(1.0, frequencies.get(term, 0) / max(total, 1)) for term in common))
    finding = either if twice <= SCORED_TWICE_BUDGET else f"({either}) NOT ({also})"
    return [finding, f"({either}) AND ({also})"]


def scored_again(terms: Sequence[str], frequencies: Mapping[str, int]) -> bool:
    """Whether memories found otherwise (by meaning, by their time, below a search's
    cut) are scored for ``terms`` by the whole query, whose BM25 is what a search
    over every term gives them: while the terms' postings fit ``SCORING_BUDGET``.
    Past it, they keep what the search gave them.

    Scoring them there with :func:`fts_queries` instead (common terms only where a
    rare one is) cost 2-3 ms more per recall in a memory of 46,500 turns
    (``bench/scale.py``, with the local model, a budget of 10,000) and found less:
    turn recall@10 0.515 against 0.527.
    """
    return bool(terms) and sum(frequencies.get(term, 0) for term in terms) <= SCORING_BUDGET


def fts_fallback(terms: Sequence[str], frequencies: Mapping[str, int], total: int) -> str | None:
    """The query for the memories :func:`fts_queries` leaves out (those holding only
    common terms), or None when it leaves out none.

    Frequencies count every memory, while a recall sees only those passing its
    filters (its session's and global ones, a source...): the rare terms may
    match only memories it cannot return. Run with the filters joined in, when
    they reject rare matches and too few are left.
    """
    rare, common = _split(terms, frequencies, total)
    either, also = fts_expression(rare), fts_expression(common)
    return None if either is None or also is None else f"({also}) NOT ({either})"


def _split(terms: Sequence[str], frequencies: Mapping[str, int], total: int) -> tuple[list[str], list[str]]:
    """The terms that find candidates and those that only score them: every term
    below ``COMMON_TERMS_FROM`` memories, else the rarest while their postings fit
    ``POSTINGS_BUDGET``. Terms with no postings cost nothing and find nothing, so
    the rarest term that has postings is always among the first."""
    if total < COMMON_TERMS_FROM:
        return list(terms), []
    ordered = sorted(terms, key=lambda t: frequencies.get(t, 0))
    kept, spent = 0, 0
    for term in ordered:
        cost = frequencies.get(term, 0)
        if spent and spent + cost > POSTINGS_BUDGET:
            break
        kept += 1
        spent += cost
    return ordered[:kept], ordered[kept:]
