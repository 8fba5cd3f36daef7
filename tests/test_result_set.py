"""What recall hands back before any sleep: each text once, near copies of one text
below what says something else, and of two values of one fact the newer first."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest

from mnemosyne import Mnemosyne
from mnemosyne.core.dedup import fact_key
from mnemosyne.core.ranking import Ranked
from mnemosyne.core.results import Statement, copies, fewer_alike, newer_first, sharing
from mnemosyne.storage.sqlite import SQLiteStore
from mnemosyne.testing import HashEmbedder

NOW = datetime(2026, 11, 27, 17, tzinfo=timezone.utc)
PREFERENCE = "User prefers small PRs under 300 lines and squash merges."
PR_RULES = ["PR titles must start with the ticket id, e.g. 'PAY-482: fix ledger lock'.",
            "Every PR needs one approving review from the ledger owners before merge."]
FILLER = ["Ran the test suite: 212 passed.", "Opened src/api/refunds.py.", "CI build #4812 passed in 12m.",
          "Checked staging logs: no errors in the last hour.", "Ticket PAY-431 moved to In Review."]


@pytest.fixture(params=[HashEmbedder(), "none"], ids=["hash", "lexical"])
def mem(request: pytest.FixtureRequest, tmp_path: Path):
    with Mnemosyne(session_id="coder", db_path=tmp_path / "m.db", embedder=request.param) as memory:
        yield memory


def test_a_text_said_again_takes_one_result_and_the_next_ones_fill_top_k(mem: Mnemosyne):
    for days in (40, 30, 20, 10):  # said again every ten days: no dedupe window catches it
        mem.remember(PREFERENCE, source="user", importance=0.8, created_at=NOW - timedelta(days=days))
    for days, rule in zip((37, 35), PR_RULES, strict=True):
        mem.remember(rule, source="user", importance=0.8, created_at=NOW - timedelta(days=days))
    found = mem.recall("what are the rules for PRs", top_k=3, now=NOW, explain=True)
    assert sorted(m.content for m in found) == sorted([PREFERENCE, *PR_RULES])
    (preference,) = [m for m in found if m.content == PREFERENCE]
    assert preference.explanation is not None and preference.explanation["copies"] == 3
    assert all(m.explanation is not None and m.explanation["copies"] == 0 for m in found if m is not preference)


def test_copies_differ_only_in_case_and_spacing_but_not_in_an_identifier(mem: Mnemosyne):
    mem.remember("Deploy the billing service on Friday", created_at=NOW - timedelta(days=9))
    mem.remember("deploy the  billing service on friday", created_at=NOW - timedelta(days=8))
    mem.remember("The staging password is Hunter2", created_at=NOW - timedelta(days=7))
    mem.remember("The staging password is hunter2", created_at=NOW - timedelta(days=6))
    assert len(mem.recall("deploy billing service friday", now=NOW)) == 1
    assert len(mem.recall("staging password", now=NOW)) == 2


def test_the_copy_kept_is_the_best_ranked_one_the_copy_of_the_time_a_query_names(mem: Mnemosyne):
    for days in (30, 20, 10):
        mem.remember("Standup: the ledger migration is blocked on review.", created_at=NOW - timedelta(days=days))
    (found,) = mem.recall("was the ledger migration blocked 20 days ago", now=NOW, explain=True)
    assert found.created_at == NOW - timedelta(days=20)
    assert found.explanation is not None and found.explanation["copies"] == 2


def test_a_superseded_value_and_the_same_text_said_again_since_are_two_results(mem: Mnemosyne):
    old = mem.remember("The deploy host is db-1.", created_at=NOW - timedelta(days=30))
    mem.remember("The deploy host is db-2.", created_at=NOW - timedelta(days=20))
    mem.sleep()
    assert mem.get(old).status == "superseded"
    again = mem.remember("The deploy host is db-1.", created_at=NOW - timedelta(days=10))  # back to db-1
    found = mem.recall("deploy host", now=NOW, include_consolidated=True)
    assert [m.id for m in found][:1] == [again] and old in {m.id for m in found}


def test_a_correction_ranks_above_the_value_it_corrects_before_any_sleep(mem: Mnemosyne):
    old = "The staging host is staging-1.payments.internal."
    new = "The staging host is now stg-eu-2.payments.internal (staging-1 was decommissioned)."
    mem.remember(old, importance=0.7, created_at=NOW - timedelta(days=50))
    for i, text in enumerate(FILLER):
        mem.remember(text, importance=0.3, created_at=NOW - timedelta(days=48 - 4 * i))
    mem.remember(new, importance=0.7, created_at=NOW - timedelta(days=10))
    found = mem.recall("what is the staging host?", top_k=3, now=NOW, explain=True)
    assert [m.content for m in found][:2] == [new, old]
    assert found[1].explanation is not None and found[1].explanation["superseded"] < 1
    assert found[1].score < found[0].score


@pytest.mark.parametrize("new", [
    "Migrated the billing database to Postgres 16 last week.",
    "The billing database moved to Postgres 16 (the old cluster was retired).",
])
def test_a_change_said_in_other_verbs_ranks_above_the_value_it_changed(mem: Mnemosyne, new: str):
    old = "The billing database is Postgres 15."
    mem.remember(old, importance=0.7, created_at=NOW - timedelta(days=50))
    for i, text in enumerate(FILLER):
        mem.remember(text, importance=0.3, created_at=NOW - timedelta(days=48 - 4 * i))
    mem.remember(new, importance=0.7, created_at=NOW - timedelta(days=10))
    found = mem.recall("which Postgres does the billing database use", top_k=3, now=NOW)
    assert [m.content for m in found][:2] == [new, old]


def test_a_value_said_again_after_its_correction_is_current_again(mem: Mnemosyne):
    mem.remember("The release manager is Tom.", created_at=NOW - timedelta(days=30))
    mem.remember("The release manager is now Priya.", created_at=NOW - timedelta(days=20))
    mem.remember("The release manager is Tom.", created_at=NOW - timedelta(days=5))  # back from leave
    found = mem.recall("release manager", now=NOW, explain=True)
    assert [m.content for m in found] == ["The release manager is Tom.", "The release manager is now Priya."]
    assert found[0].explanation is not None and found[0].explanation["copies"] == 1


def test_a_global_fact_is_corrected_by_another_sessions_global_fact(tmp_path: Path):
    db = tmp_path / "m.db"
    with Mnemosyne(session_id="support-acme", db_path=db, embedder="none") as acme, \
            Mnemosyne(session_id="support-globex", db_path=db, embedder="none") as globex:
        acme.remember("The API rate limit is 100 requests per minute.", scope="global",
                      created_at=NOW - timedelta(days=60))
        globex.remember("The API rate limit is 300 requests per minute per token.", scope="global",
                        created_at=NOW - timedelta(days=5))
        acme.remember("The API rate limit is 300 requests per minute.", scope="global",
                      created_at=NOW - timedelta(days=4))
        for reader in (acme, globex):
            found = [m.content for m in reader.recall("what is the API rate limit", now=NOW)]
            assert found[-1] == "The API rate limit is 100 requests per minute.", reader.session_id


def test_a_sessions_own_fact_is_not_corrected_by_what_another_session_shares(tmp_path: Path):
    """"The user" of one session is not another's: a private value is its own."""
    db = tmp_path / "m.db"
    with Mnemosyne(session_id="ana", db_path=db, embedder="none") as ana, \
            Mnemosyne(session_id="bo", db_path=db, embedder="none") as bo:
        ana.remember("The user's timezone is Europe/Lisbon.", created_at=NOW - timedelta(days=9))
        bo.remember("The user's timezone is America/Chicago.", scope="global", created_at=NOW - timedelta(days=1))
        found = ana.recall("the user's timezone", now=NOW, explain=True)
        assert all(m.explanation is not None and m.explanation["superseded"] == 1 for m in found)
        assert len(found) == 2


def test_a_listing_keeps_every_value_in_its_own_order(mem: Mnemosyne):
    mem.remember("The deploy host is db-1.", created_at=NOW - timedelta(hours=30))
    mem.remember("The deploy host is db-2.", created_at=NOW - timedelta(hours=26))
    found = mem.recall("what happened yesterday", now=NOW, explain=True)
    assert [m.content for m in found] == ["The deploy host is db-2.", "The deploy host is db-1."]
    assert all(m.explanation is not None and m.explanation["superseded"] == 1 for m in found)


LOG_LINES = ["Opened src/api/user.py.", "Ran ruff on src/api/user.py: 3 warnings fixed.",
             "Edited src/api/user.py: added type hints.", "Ran git blame on src/api/user.py.",
             "Reverted a whitespace change in src/api/user.py."]
DECISION = ("Decision: email normalisation (lower-casing, stripping +tags) lives in normalize_email() in "
            "src/api/user.py; never duplicate it in the views.")


@pytest.mark.parametrize("repeats", [6, 24])  # 24 times five lines: more than a recall's 50 candidates
def test_log_lines_alike_but_for_a_step_number_leave_room_for_what_says_something_else(tmp_path: Path, repeats: int):
    pytest.importorskip("onnxruntime", reason="the 'local' extra (onnxruntime) is not installed")
    with Mnemosyne(session_id="coder", db_path=tmp_path / "m.db", embedder="local") as mem:
        start = NOW - timedelta(days=30)
        decision = mem.remember(DECISION, source="decision-log", importance=0.9, created_at=start)
        mem.remember_many(  # each of five lines again and again, a step number apart (cosine 0.98)
            {"content": f"{LOG_LINES[step % 5]} (step {step})", "source": "terminal", "importance": 0.2,
             "created_at": start + timedelta(minutes=step)}
            for step in range(5 * repeats))
        found = mem.recall("what should I know about src/api/user.py", top_k=10, now=NOW, explain=True)
        ids = [m.id for m in found]
        assert ids.index(decision) == 5  # below one of each line, above their repeats
        assert {m.content.split(" (step")[0] for m in found[:5]} == set(LOG_LINES)
        assert all(m.explanation is not None and m.explanation["alike"] < 1 for m in found[6:])
        # Lowered, not left out: every line is still a result when top_k reaches them.
        assert len(mem.recall("what should I know about src/api/user.py", top_k=200, now=NOW)) == 5 * repeats + 1


def test_a_recall_that_near_copies_crowd_searches_again_with_the_query_embedded_once(tmp_path: Path):
    embedder = HashEmbedder()
    line = "Ran the whole payments test suite against the staging database: every check passed, run {}"
    with Mnemosyne(session_id="ci", db_path=tmp_path / "m.db", embedder=embedder) as mem:
        mem.remember_many({"content": line.format(run)} for run in range(120))  # cosine 0.97 to one another
        calls = embedder.calls
        found = mem.recall("payments test suite on staging", top_k=10)
        assert len(found) == 10
        assert embedder.calls == calls + 1


def test_a_recall_reads_each_results_text_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # Whether each result states a fact, and whether it says a change, are read from
    # its text: once per recall, not once for each.
    read: list[int] = []
    contents_by_seq = SQLiteStore.contents_by_seq

    def counted(self: SQLiteStore, seqs):
        seqs = list(seqs)
        read.extend(seqs)
        return contents_by_seq(self, seqs)

    with Mnemosyne(session_id="ops", db_path=tmp_path / "m.db", embedder=HashEmbedder()) as mem:
        mem.remember("The deploy window is Friday evening.", created_at=NOW - timedelta(days=9))
        mem.remember("The deploy window moved to Thursday now.", created_at=NOW - timedelta(days=2))
        mem.remember_many({"content": text, "created_at": NOW - timedelta(days=5)} for text in FILLER)
        monkeypatch.setattr(SQLiteStore, "contents_by_seq", counted)
        found = mem.recall("when is the deploy window", now=NOW)
    assert found[0].content == "The deploy window moved to Thursday now."
    assert read and len(read) == len(set(read))

# -- the pure parts -------------------------------------------------------------------


def test_only_texts_sharing_a_fingerprint_are_read_and_folded():
    fingerprints = {1: ("h", False), 2: ("h", False), 3: ("h", True), 4: ("g", False), 5: ("h", False)}
    assert sorted(sharing(fingerprints)) == [1, 2, 5]
    texts = {1: "Deploy on Friday", 2: "deploy  on friday", 3: "Deploy on Friday", 5: "DEPLOY on Friday"}
    assert copies(fingerprints, texts) == {1: 1, 2: 1}  # 3 is superseded; "DEPLOY" is written as a name


def statement(text: str, at: float, session: str = "s", shared: bool = False) -> Statement:
    fact = fact_key(text)
    assert fact is not None, text
    return Statement(fact, at, session, shared)


def order(statements: dict[int, Statement], scores: dict[int, float] | None = None) -> list[int]:
    scores = scores or {key: 1.0 - key / 10 for key in statements}
    ranked = sorted((Ranked(key, score, {}) for key, score in scores.items()), key=lambda r: -r.score)
    return [r.key for r in newer_first(ranked, statements, 0.75)]


@pytest.mark.parametrize(("older", "newer", "expected"), [
    ("The owner is Alice.", "The owner is Bob.", [2, 1]),
    ("The beta flag is enabled.", "The beta flag is not enabled.", [2, 1]),
    ("The beta flag is not enabled.", "The beta flag is enabled.", [2, 1]),
    ("The owner is Alice.", "The owner is not Bob.", [1, 2]),  # says nothing of Alice
    ("The owner is not Alice.", "The owner is not Bob.", [1, 2]),
    ("The meeting is at 10am.", "The meeting is in room 4.", [1, 2]),  # when, then where
    ("The owner is Alice.", "The owner is Alice.", [1, 2]),
    ("The CI is Jenkins.", "Switched the CI to GitHub Actions.", [2, 1]),  # a change, in other verbs
    ("The billing database is Postgres 15.", "The billing database moved to Postgres 16.", [2, 1]),
    ("The CI is Jenkins.", "We will move the CI to GitHub Actions.", None),  # a plan: no statement
])
def test_a_newer_statement_that_says_otherwise_ranks_the_older_below_it(
    older: str, newer: str, expected: list[int] | None
):
    if expected is None:
        assert fact_key(newer) is None
    else:
        assert order({1: statement(older, 1.0), 2: statement(newer, 2.0)}) == expected


def test_who_may_correct_whom():
    old, new = "The host is db-1.", "The host is db-2."
    assert order({1: statement(old, 1.0, "a"), 2: statement(new, 2.0, "b")}) == [1, 2]  # another's private
    assert order({1: statement(old, 1.0, "a"), 2: statement(new, 2.0, "b", shared=True)}) == [1, 2]
    assert order({1: statement(old, 1.0, "a", shared=True), 2: statement(new, 2.0, "b", shared=True)}) == [2, 1]
    assert order({1: statement(old, 1.0, "a", shared=True), 2: statement(new, 2.0, "a")}) == [2, 1]  # its own
    assert order({1: statement(old, 2.0), 2: statement(new, 2.0)}) == [1, 2]  # said at once: neither is newer
    mine, theirs = "The user's timezone is Europe/Lisbon.", "The user's timezone is America/Chicago."
    assert order({1: statement(mine, 1.0, "a", shared=True), 2: statement(theirs, 2.0, "b", shared=True)}) == [1, 2]
    assert order({1: statement(mine, 1.0, "a", shared=True), 2: statement(theirs, 2.0, "a", shared=True)}) == [2, 1]


def test_each_older_value_sinks_below_the_newest_and_the_rest_keep_their_order():
    statements = {1: statement("The host is db-1.", 1.0), 2: statement("The host is db-2.", 2.0),
                  4: statement("The host is db-3.", 3.0)}
    assert order(statements, {1: 0.9, 2: 0.8, 3: 0.7, 4: 0.2}) == [3, 4, 1, 2]
    ranked = newer_first([Ranked(1, 0.9, {"superseded": 1.0, "score": 0.9}), Ranked(4, 0.6, {})], statements, 0.75)
    assert ranked[1].components == {"superseded": pytest.approx(0.45 / 0.9), "score": pytest.approx(0.45)}


def test_each_result_alike_to_ones_above_it_is_lowered_once_for_each():
    ranked = [Ranked(1, 1.0, {}), Ranked(2, 0.95, {"score": 0.95}), Ranked(3, 0.9, {}), Ranked(4, 0.7, {})]
    closeness = np.eye(4)
    closeness[0, 1] = closeness[1, 0] = closeness[0, 2] = closeness[2, 0] = closeness[1, 2] = closeness[2, 1] = 0.97
    moved = fewer_alike(ranked, closeness, 0.95, 0.8)
    assert [(r.key, round(r.score, 3)) for r in moved] == [(1, 1.0), (2, 0.76), (4, 0.7), (3, 0.576)]
    assert moved[1].components == {"score": pytest.approx(0.76), "alike": pytest.approx(0.8)}
    assert fewer_alike(ranked, np.full((4, 4), 0.94), 0.95, 0.8) == ranked  # none alike enough: nothing moves
