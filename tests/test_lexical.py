"""Lexical search in a large memory: rare terms find candidates, every term scores them."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from mnemosyne import Mnemosyne
from mnemosyne.core import lexical
from mnemosyne.core.lexical import fts_queries
from mnemosyne.storage.base import Filters
from mnemosyne.storage.sqlite import search

NOW = datetime(2026, 6, 1, tzinfo=timezone.utc)


def test_a_small_memory_searches_every_term_in_one_query():
    assert fts_queries(["deploy", "friday"], {"deploy": 4000, "friday": 10}, total=4_000) == [
        '"deploy" OR "friday"']


def test_past_the_threshold_rare_terms_find_and_common_terms_only_score(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(lexical, "POSTINGS_BUDGET", 100)
    counts = {"the": 9000, "deploy": 3000, "kubernetes": 40, "helm": 50}
    rare, common = '"kubernetes" OR "helm"', '"deploy" OR "the"'
    assert fts_queries(list(counts), counts, total=50_000) == [rare, f"({rare}) AND ({common})"]


def test_memories_holding_both_kinds_are_scored_once_when_they_are_many():
    """``(rare)`` scores a memory holding a common term too a second time; when the
    rarest term is itself common, ``(rare) NOT (common)`` is the cheaper query."""
    counts = {"alpha": 40_000, "gamma": 5_000}
    assert fts_queries(list(counts), counts, total=50_000) == ['("gamma") NOT ("alpha")', '("gamma") AND ("alpha")']
    counts = {"alpha": 1_000, "gamma": 400}
    assert fts_queries(list(counts), counts, total=50_000) == ['"gamma"', '("gamma") AND ("alpha")']


def test_the_rarest_term_always_finds_candidates(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(lexical, "POSTINGS_BUDGET", 10)
    counts = {"deploy": 3000, "release": 2000}
    assert fts_queries(list(counts), counts, total=50_000)[0] == '"release"'


def test_memories_rare_terms_find_get_the_whole_query_s_score(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """With a budget so small that only "zebrafish" finds candidates, recall ranks and
    scores exactly as when every term is searched: the common terms still count."""
    with Mnemosyne(session_id="a", db_path=tmp_path / "m.db", embedder="none") as mem:
        mem.remember_many([{"content": f"the weekly deploy note {i}"} for i in range(60)])
        mem.remember("zebrafish and the weekly deploy went out on time with every check green")
        mem.remember("zebrafish")
        monkeypatch.setattr(lexical, "COMMON_TERMS_FROM", 10)

        def ranking(budget: int) -> list[tuple[str, float]]:
            monkeypatch.setattr(lexical, "POSTINGS_BUDGET", budget)
            found = mem.recall("zebrafish weekly deploy", top_k=3, now=NOW)
            return [(m.content, m.score) for m in found]

        assert ranking(5) == ranking(10**9)


@pytest.mark.parametrize("common_from", [10, 10**6])
def test_a_long_pasted_query_ranks_and_scores_as_if_every_term_were_searched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, common_from: int
):
    """Terms no memory holds are left out of what is searched and scored; the BM25
    of each memory, in both fields, is the whole query's. A phrase no one memory
    holds still counts where an episode's context runs it across two events."""
    monkeypatch.setattr(lexical, "COMMON_TERMS_FROM", common_from)
    with Mnemosyne(session_id="a", db_path=tmp_path / "m.db", embedder="none", dedupe_window=0) as mem:
        mem.remember_many([f"the weekly deploy note {i} for the checkout service" for i in range(40)])
        mem.remember("we moved the stylesheet to main")
        mem.remember("scss builds now run in the deploy job")
        mem.remember("東京 office deploy checklist 🙂 done")
        mem.remember('Traceback: File "/srv/app/checkout.py", line 88, in handler ValueError')
        trace = ("Traceback (most recent call last): File \"/usr/lib/python3.12/site-packages/zzpkg/module_1.py\", "
                 "line 104, in handler_1 result = self.process(request, timeout=1.5, retries=0x0001) main.scss "
                 "ValueError: invalid literal for int() with base 10: 'abc' 東京 🙂 checkout-service v1.7.7")
        assert lexical.held_terms(lexical.search_terms(trace), mem._store.term_frequencies(
            lexical.search_terms(trace))[0]) != lexical.search_terms(trace)  # some terms are held nowhere

        def ranking() -> list[tuple[str, float, object]]:
            found = mem.recall(trace, top_k=20, now=NOW, explain=True)
            return [(m.content, m.score, m.explanation) for m in found]

        searched_for = ranking()
        monkeypatch.setattr(lexical, "held_terms", lambda terms, counts, in_windows=False: list(terms))
        assert searched_for == ranking()
        assert any(m[2]["context"] > 0 for m in searched_for if m[0] == "we moved the stylesheet to main")


@pytest.mark.parametrize("filters", [{}, {"source": "ops"}, {"source": "nobody"}, {"scope": "session"},
                                     {"scope": "global"}, {"since": NOW.timestamp() - 7200}])
def test_a_small_session_in_a_shared_database_finds_the_same_by_its_few_memories(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, filters: dict[str, object]
):
    """Where the rare term's matches are all another session's, the common term is
    searched among the viewer's few memories: the same results and scores as with
    the filters joined into the search."""
    monkeypatch.setattr(lexical, "COMMON_TERMS_FROM", 10)
    db = tmp_path / "m.db"
    with Mnemosyne(session_id="big", db_path=db, embedder="none", dedupe_window=0) as big:
        big.remember_many([{"content": f"zebrafish tank {i} and the weekly deploy", "scope": "session",
                            "created_at": NOW.timestamp() - 86_400 + i} for i in range(30)])
        big.remember_many([{"content": f"shared deploy checklist item {i}", "scope": "global"} for i in range(5)])
    with Mnemosyne(session_id="small", db_path=db, embedder="none", dedupe_window=0) as small:
        small.remember_many([{"content": text, "source": "ops", "created_at": NOW.timestamp() - 3600 * i}
                             for i, text in enumerate(["the deploy went out at noon", "rollback of the deploy",
                                                       "lunch order for the team"])])

        def ranking() -> list[tuple[str, float]]:
            return [(m.content, m.score) for m in small.recall("zebrafish deploy", top_k=10, now=NOW, **filters)]

        by_few = ranking()
        monkeypatch.setattr(search, "_FEW_PASSING", -1)
        assert by_few == ranking()
        assert bool(by_few) == (filters.get("source") != "nobody")


def test_a_search_cut_short_keeps_the_whole_query_s_best_matches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """More memories hold the rare term than the search keeps. The ones also holding
    common terms score higher; those kept are the best of the whole query, with its
    scores, in both fields."""
    with Mnemosyne(session_id="a", db_path=tmp_path / "m.db", embedder="none", dedupe_window=0) as mem:
        mem.remember_many([f"the weekly deploy note {i}" for i in range(60)])
        mem.remember_many([
            f"zebrafish {'tank ' * (i % 5)}{'weekly deploy' if i % 3 == 0 else 'feeding'} {i}" for i in range(40)
        ])
        store = mem._store
        filters = Filters(viewer_session="a")
        terms = ["zebrafish", "weekly", "deploy"]
        counts, _ = store.term_frequencies(terms)
        monkeypatch.setattr(lexical, "POSTINGS_BUDGET", counts["zebrafish"])
        split = lexical.fts_queries(terms, counts, total=10**6)
        assert split == ['"zebrafish"', '("zebrafish") AND ("weekly" OR "deploy")']
        whole = lexical.fts_expression(terms)
        for limit in (5, 12, 30):
            found = store.search_text({"content": split, "context": split}, filters, limit)
            expected = store.search_text({"content": [whole], "context": [whole]}, filters, 1000)
            for field, hits in found.items():
                best = [hit for hit in expected[field] if "zebrafish" in store.contents_by_seq([hit[0]])[hit[0]]]
                assert [seq for seq, _ in hits] == [seq for seq, _ in best[:limit]]
                assert [score for _, score in hits] == pytest.approx([score for _, score in best[:limit]])


def test_memories_found_otherwise_are_scored_again_unless_the_terms_postings_are_many(
    monkeypatch: pytest.MonkeyPatch,
):
    counts = {"deploy": 3000, "kubernetes": 40}
    assert lexical.scored_again(list(counts), counts)
    monkeypatch.setattr(lexical, "SCORING_BUDGET", 1000)
    assert not lexical.scored_again(list(counts), counts)
    assert not lexical.scored_again([], {})


def test_memories_below_a_search_s_cut_score_as_a_deeper_search_scores_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Candidates found otherwise are scored on the scale of a search's hits: what the
    search gives those it keeps, split query or not, and what a search of every term
    gives the others."""
    with Mnemosyne(session_id="a", db_path=tmp_path / "m.db", embedder="none", dedupe_window=0) as mem:
        mem.remember_many([f"the weekly deploy note {i}{' weekly' * (i % 4)}" for i in range(60)])
        mem.remember_many([f"zebrafish {'tank ' * (i % 5)}{'weekly' if i % 3 else 'feeding'} {i}" for i in range(40)])
        store = mem._store
        filters = Filters(viewer_session="a")
        terms = ["zebrafish", "weekly", "deploy"]
        counts, _ = store.term_frequencies(terms)
        monkeypatch.setattr(lexical, "POSTINGS_BUDGET", counts["zebrafish"])
        split = lexical.fts_queries(terms, counts, total=10**6)
        whole = lexical.fts_expression(terms)
        assert len(split) == 2 and whole is not None
        every = {field: dict(hits) for field, hits in
                 store.search_text({"content": [whole], "context": [whole]}, filters, 1000).items()}
        for queries in ([whole], split):
            for field, hits in store.search_text({"content": queries, "context": queries}, filters, 10).items():
                assert dict(hits) == pytest.approx({seq: every[field][seq] for seq, _ in hits})
        for field, scores in every.items():
            assert dict(store.text_scores(whole, {field: list(scores)})[field]) == pytest.approx(scores)


def test_a_term_no_memory_holds_does_not_take_the_rarest_term_s_place(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(lexical, "POSTINGS_BUDGET", 10)
    counts = {"deploy": 3000, "schedule": 0, "release": 2000}
    assert fts_queries(list(counts), counts, total=50_000)[0] == '"schedule" OR "release"'
    assert lexical.fts_fallback(list(counts), counts, total=50_000) == '("deploy") NOT ("schedule" OR "release")'
    assert lexical.fts_fallback(["deploy", "schedule"], {"deploy": 3000}, total=50_000) is None


def test_past_the_threshold_every_memory_holding_a_query_word_can_be_found(tmp_path: Path):
    """Rare terms find candidates: if they match nothing, or only memories this
    recall may not return (another session's), the common terms find them."""
    with Mnemosyne(session_id="busy", db_path=tmp_path / "m.db", embedder="none", dedupe_window=0) as busy:
        busy.remember_many([f"deploy log line {i}" for i in range(lexical.COMMON_TERMS_FROM)])
        busy.remember_many([f"kestrel observation {i}" for i in range(3)])  # private to "busy"
    with Mnemosyne(session_id="website", db_path=tmp_path / "m.db", embedder="none", dedupe_window=0) as mem:
        mine = mem.remember_many([f"the deploy of the marketing site, version {i}, is on Friday" for i in range(20)])
        mem.remember_many([{"content": f"deploy checklist {i}", "source": "ops"} for i in range(20)])
        for query in ("deploy schedule", "kestrel deploy"):
            found = mem.recall(query, top_k=10, source="conversation")
            assert len(found) == 10 and {m.id for m in found} <= set(mine), query


def test_the_common_terms_are_searched_only_when_the_results_would_fall_short(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Searching them scores every memory holding one: not while the rare terms
    already found enough that this recall may return, in any field."""
    from mnemosyne.storage.sqlite import search

    searched: list[str] = []
    ranked = search._ranked
    monkeypatch.setattr(search, "_ranked", lambda conn, table, query, *rest, **named: searched.append(query) or ranked(
        conn, table, query, *rest, **named))
    with Mnemosyne(session_id="busy", db_path=tmp_path / "m.db", embedder="none", dedupe_window=0) as busy:
        busy.remember_many([f"deploy log line {i}" for i in range(lexical.COMMON_TERMS_FROM)])
        busy.remember_many([f"kestrel sighting {i}" for i in range(3)])  # private to "busy"
    with Mnemosyne(session_id="website", db_path=tmp_path / "m.db", embedder="none", dedupe_window=0) as mem:
        mem.remember_many([f"the kestrel deploy of version {i}" for i in range(20)])
        searched.clear()
        assert len(mem.recall("kestrel deploy", top_k=10)) == 10
        assert not any(query.startswith('("deploy") NOT') for query in searched)
    # A session whose own memories hold only the common term:
    with Mnemosyne(session_id="other", db_path=tmp_path / "m.db", embedder="none", dedupe_window=0) as other:
        other.remember_many([f"deploy checklist {i}" for i in range(20)])
        searched.clear()
        assert len(other.recall("kestrel deploy", top_k=10)) == 10
        assert any(query.startswith('("deploy") NOT') for query in searched)


def test_term_counts_follow_forgets_and_words_new_to_the_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Counts are kept while memories are only added; a forget may make a common term
    rare, and a word no memory held may become common."""
    monkeypatch.setattr(lexical, "COMMON_TERMS_FROM", 10)
    monkeypatch.setattr(lexical, "POSTINGS_BUDGET", 15)
    with Mnemosyne(session_id="a", db_path=tmp_path / "m.db", embedder="none", dedupe_window=0) as mem:
        mem.remember_many([f"filler line {i}" for i in range(400)])
        kubernetes = mem.remember_many([f"kubernetes cluster note {i}" for i in range(60)])
        mem.remember_many([f"zebrafish tank note {i}" for i in range(10)])
        query = "kubernetes zebrafish"
        mem.recall(query)  # counts them: kubernetes is common, zebrafish finds the candidates
        for memory_id in kubernetes[5:]:
            mem.forget(memory_id)
        found = {m.id for m in mem.recall(query, top_k=20)}
        assert set(kubernetes[:5]) <= found  # now the rarer term
        assert mem._store.term_frequencies(["blorp"])[0] == {"blorp": 0}
        mem.remember_many([f"blorp thing {i}" for i in range(40)])  # under 10% more memories
        assert mem._store.term_frequencies(["blorp"])[0] == {"blorp": 40}


def test_words_the_index_matches_with_a_term_are_never_ruled_out(tmp_path: Path):
    """``may_share_stem`` answers False only where FTS5's Porter stemmer never matches:
    checked against the index itself, over the words of these docs and their
    inflections (three letters and fewer included)."""
    import sqlite3

    docs = Path(__file__).parent.parent / "docs"
    words = sorted({w for page in docs.glob("*.md") for w in lexical.tokenize(page.read_text()) if w.isalpha()})
    endings = ["", "s", "es", "ies", "ed", "ing", "er", "ly", "ation", "ational", "ness", "y", "e"]
    vocabulary = sorted({w + e for w in words for e in endings} | {"i", "ies", "as", "is", "ti", "tie", "ties", "tis"})
    conn = sqlite3.connect(tmp_path / "words.db")
    conn.execute("CREATE VIRTUAL TABLE words USING fts5(word, tokenize = 'porter unicode61 remove_diacritics 2')")
    conn.executemany("INSERT INTO words (rowid, word) VALUES (?, ?)", enumerate(vocabulary))
    for term in vocabulary[::7]:
        rows = conn.execute("SELECT rowid FROM words WHERE words MATCH ?", (f'"{term}"',))
        matched = [vocabulary[row] for (row,) in rows]
        assert matched and all(lexical.may_share_stem(word, term) for word in matched), term


def test_the_terms_a_memory_holds_are_the_index_s_answer(tmp_path: Path):
    """Words read in Python stand in for asking the indexes only where they are sure:
    an emoji the index of the text as stored counts as a letter ("Thanks🙂" is one
    token there, two in the CJK and emoji index), a Porter stem that keeps one letter
    ("eyed" as "ei"), folded accents, inflections."""
    from mnemosyne.storage.sqlite.search import _terms_held

    texts = ["Thanks🙂 see you", "so fun🤔 really", "I'm eyed by the cat", "deploying the café", "aeds", "o'neil_x"]
    terms = ["thanks", "fun", "eies", "eiing", "deploy", "cafe", "café", "aing", "see", "neil", "x", "o"]
    with Mnemosyne(session_id="a", db_path=tmp_path / "m.db", embedder="none", dedupe_window=0) as mem:
        ids = mem.remember_many(texts)
        with mem._store._db.read() as conn:
            seqs = dict(conn.execute(f"SELECT id, seq FROM memories WHERE id IN ({','.join('?' * len(ids))})", ids))
            contents = {seqs[memory_id]: text for memory_id, text in zip(ids, texts, strict=True)}
            held = _terms_held(conn, terms, contents)
            one = ("SELECT 1 FROM memories_fts WHERE memories_fts MATCH ?1 AND rowid = ?2 "
                   "UNION SELECT 1 FROM memories_cjk_fts WHERE memories_cjk_fts MATCH ?1 AND rowid = ?2")
            for seq in contents:
                asked = {term for term in terms if conn.execute(one, (f'"{term}"', seq)).fetchone()}
                assert held[seq] == asked, contents[seq]


@pytest.mark.parametrize(("question", "answer"), [
    ("How old was I when Alex was born?", "I just turned 32 last month, so a career change is still possible."),
    ("How long have I been working in my current role?", "That's 3 years and 9 months in the company now."),
])
def test_an_answer_written_in_words_its_question_does_not_use_is_found(tmp_path: Path, question: str, answer: str):
    with Mnemosyne(db_path=tmp_path / "m.db", embedder="none") as mem:
        wanted = mem.remember(answer, created_at=NOW)
        for i, text in enumerate(["Alex is our new intern; he was born in Leeds.", "I like working from the cafe.",
                                  "The role of the mentor is to listen.", "My old laptop is slow."]):
            mem.remember(text, created_at=datetime(2026, 5, i + 1, tzinfo=timezone.utc))
        assert wanted in [m.id for m in mem.recall(question, now=NOW)]


def test_the_words_an_answer_is_written_in():
    assert lexical.answer_words("How old was I when Alex was born?") == ["age", "turned"]
    assert lexical.answer_words("how long did the move take") == ["years", "months"]
    assert lexical.answer_words("How many years was Max in the family") == []


@pytest.mark.parametrize(("query", "said"), [
    ("what job does the user have", "what job do I have"),
    ("when is the user free to talk", "when am I free to talk"),
    ("what has the user asked for", "what have I asked for"),
    ("what is the user's favourite colour", "what is my favourite colour"),
    ("User's timezone", "my timezone"),
    ("what did we send to the user", "what did we send to me"),
    ("where does the user live", "where do I live"),
    ("does the user prefer dark mode", "do I prefer dark mode"),
    ("the user prefers dark mode", "I prefers dark mode"),  # the model reads past the grammar
    ("what did I eat", None),
    ("the users table schema", None),
    ("the end-user's locale", None),  # another's user
])
def test_the_user_asked_of_in_the_third_person_is_put_in_the_first(query: str, said: str | None):
    assert lexical.as_the_user_says(query) == said
