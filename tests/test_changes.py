"""A change said in other words than the value it changed ("Lena lives in Berlin."
then "Lena moved to Lisbon in October.") ranks above that value, and nothing else
moves: not what a change says of something else, not talk, not another's "I"."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from mnemosyne import Mnemosyne
from mnemosyne.core.changes import says_a_change
from mnemosyne.core.ranking import Ranked, Weights
from mnemosyne.core.results import Said, changed_after

NOW = datetime(2026, 11, 30, 12, tzinfo=timezone.utc)
FILLER = [
    "Booked the team offsite venue for March.",
    "The quarterly report is due on Friday.",
    "Jane likes hiking on weekends.",
    "The payments service exposes a refunds endpoint.",
    "Lena recommended a bakery near the station.",
    "Pro plan customers get priority support.",
]


def local_model_or_skip() -> str:
    pytest.importorskip("onnxruntime", reason="the 'local' extra (onnxruntime) is not installed")
    pytest.importorskip("tokenizers", reason="the 'local' extra (tokenizers) is not installed")
    return "local"


@pytest.mark.parametrize(("older", "newer", "query"), [
    ("Lena lives in Berlin.", "Lena moved to Lisbon in October.", "where does Lena live"),
    ("Jane is vegetarian.", "Jane started eating fish again; she is pescatarian now, still no meat.",
     "is Jane vegetarian?"),
    ("We target Python 3.11 for the payments service.",
     "Upgraded the payments service to Python 3.12; 3.11 is no longer supported.", "python version"),
    ("Pro plan costs 49 USD per seat per month; Enterprise is custom pricing.",
     "Pro plan price changed to 59 USD per seat per month from November 1; existing customers keep 49 USD "
     "until renewal.", "how much does the pro plan cost"),
])
def test_a_change_in_other_words_ranks_above_the_value_it_changed(tmp_path: Path, older: str, newer: str, query: str):
    with Mnemosyne(session_id="assistant", db_path=tmp_path / "m.db", embedder=local_model_or_skip()) as mem:
        for days, text in enumerate(FILLER, start=100):
            mem.remember(text, created_at=NOW - timedelta(days=days))
        old = mem.remember(older, source="user", created_at=NOW - timedelta(days=90))
        new = mem.remember(newer, source="user", created_at=NOW - timedelta(days=20))
        found = [m.id for m in mem.recall(query, top_k=5, now=NOW)]
        assert found.index(new) + 1 == found.index(old)  # the newer takes the older's place, just above it


def test_a_change_ranks_where_what_it_changed_ranked_above_other_matches(tmp_path: Path):
    with Mnemosyne(session_id="assistant", db_path=tmp_path / "m.db", embedder=local_model_or_skip()) as mem:
        mem.remember("Jane lives at 12 Baker Road, Leeds.", source="user", created_at=NOW - timedelta(days=200))
        mem.remember("Jane is vegetarian.", source="user", created_at=NOW - timedelta(days=190))
        old = mem.remember("Lena lives in Berlin.", source="user", created_at=NOW - timedelta(days=150))
        mem.remember("Reminder: text Lena.", source="reminder", created_at=NOW - timedelta(days=120))
        new = mem.remember("Lena moved to Lisbon in October.", source="user", created_at=NOW - timedelta(days=40))
        # Jane's address shares "lives" with the question; the change shares "Lena" alone.
        assert [m.id for m in mem.recall("where does Lena live", now=NOW)][:2] == [new, old]


def test_a_change_of_something_else_moves_nothing(tmp_path: Path):
    with Mnemosyne(session_id="assistant", db_path=tmp_path / "m.db", embedder=local_model_or_skip()) as mem:
        diet = mem.remember("Jane is vegetarian.", source="user", created_at=NOW - timedelta(days=90))
        move = mem.remember("Jane moved to Bristol in July.", source="user", created_at=NOW - timedelta(days=20))
        found = [m.id for m in mem.recall("what does Jane eat", top_k=5, now=NOW)]
        assert found[0] == diet and move in found


# Changes in other words than what they changed, and changes of something else about
# the same person or service: how far apart the bundled model holds them decides
# ``Weights.changed_close``.
CHANGES = [
    ("We target Python 3.11 for the payments service.",
     "Upgraded the payments service to Python 3.12; 3.11 is no longer supported."),
    ("Jane is vegetarian.", "Jane started eating fish again; she is pescatarian now, still no meat."),
    ("Jane's dentist is Dr. Patel at Elm Street Dental.", "Jane switched dentists: she now sees Dr. Okafor."),
    ("Jane lives at 12 Baker Road, Leeds.", "Jane moved to 4 Harbour Lane, Bristol BS1 4RN."),
    ("Lena lives in Berlin.", "Lena moved to Lisbon in October."),
    ("Acme's main contact is Dolores Ruiz (IT admin).", "Acme's main contact is now Ben Cho; Dolores Ruiz left."),
    ("Pro plan costs 49 USD per seat per month.", "Pro plan price changed to 59 USD per seat per month."),
    ("The deploy target is Kubernetes on GKE.", "We migrated deploys from GKE to AWS EKS last week."),
    ("Our CI runs on Jenkins.", "Switched the CI from Jenkins to GitHub Actions."),
    ("Mark works at Google as a designer.", "Mark left Google and now works at Figma."),
    ("The office is at 10 King Street.", "The office moved to 22 Queen Street in March."),
    ("Sara's phone number is 555-0100.", "Sara changed her number to 555-0199."),
    ("The on-call engineer this week is Dana.", "Dana is no longer on call; Marco took over."),
    ("Tom prefers tea in the morning.", "Tom stopped drinking tea and drinks coffee now."),
    ("The database is Postgres 14.", "Upgraded the database to Postgres 16."),
    ("The team standup is at 9:30.", "The standup moved to 10:00 from next Monday."),
    ("Bob is allergic to peanuts.", "Bob is no longer allergic to peanuts after treatment."),
    ("My favourite editor is Vim.", "I switched to VS Code as my main editor."),
    ("The API key is stored in the .env file.", "The API key now lives in Vault at secret/api."),
]
OTHER_CHANGES = [
    ("Jane is vegetarian.", "Jane switched dentists: she now sees Dr. Okafor."),
    ("Jane lives at 12 Baker Road, Leeds.", "Jane started eating fish again; she is pescatarian now."),
    ("Lena lives in Berlin.", "Jane moved to 4 Harbour Lane, Bristol BS1 4RN."),
    ("We target Python 3.11 for the payments service.", "The payments service now retries webhooks three times."),
    ("The release manager is Tom.", "Tom moved to the data team."),
    ("Pro plan costs 49 USD per seat per month.", "Acme switched to the Pro plan in October."),
    ("The staging database is Postgres 14.", "We moved the staging deploys to Fridays."),
    ("I love hiking in the mountains.", "I started running marathons now."),
    ("Jane's dentist is Dr. Patel at Elm Street Dental.", "Jane's dentist appointment moved to December 3."),
    ("The deploy target is Kubernetes on GKE.", "We migrated the docs site to a new theme."),
    ("Our CI runs on Jenkins.", "Marco moved to the platform team."),
    ("Mark works at Google as a designer.", "Mark started learning the piano."),
    ("The office is at 10 King Street.", "The coffee machine in the office was replaced."),
    ("Sara's phone number is 555-0100.", "Sara moved her vacation to August."),
    ("The on-call engineer this week is Dana.", "Dana switched her laptop to Linux."),
    ("Tom prefers tea in the morning.", "Tom now leads the mobile team."),
    ("The database is Postgres 14.", "The cache is now Redis 7."),
    ("The team standup is at 9:30.", "The retro moved to Thursdays."),
    ("Bob is allergic to peanuts.", "Bob started a new job at Stripe."),
    ("My favourite editor is Vim.", "I switched my keyboard layout to Colemak."),
    ("The API key is stored in the .env file.", "The API now returns 429 when rate limited."),
    ("Jane is vegetarian.", "Jane moved to Bristol in July."),
    ("The staging host is stg-eu-2.", "The production host moved to eu-west-1."),
    ("Priya is the release manager.", "Priya switched to the night shift."),
]


def test_the_bundled_model_holds_changes_closer_than_changes_of_something_else():
    local_model_or_skip()
    from mnemosyne.embedders.local import LocalEmbedder

    model, close = LocalEmbedder(), Weights().changed_close

    def reaching(pairs: list[tuple[str, str]]) -> int:
        vectors = model.embed([text for pair in pairs for text in pair])
        return sum(float(vectors[i] @ vectors[i + 1]) >= close for i in range(0, len(vectors), 2))

    assert all(says_a_change(newer) for _, newer in CHANGES + OTHER_CHANGES)
    # Measured: 16 of 19, and 2 of 24 ("Jane's dentist is" and "Jane's dentist
    # appointment moved" 0.62, "the staging host" and "the production host" 0.60).
    assert reaching(CHANGES) >= 15
    assert reaching(OTHER_CHANGES) <= 3


@pytest.mark.parametrize("text", [
    "Lena moved to Lisbon in October.",
    "She is pescatarian now.",
    "Acme's main contact is now Ben Cho; Dolores Ruiz left the company.",
    "Jane switched dentists: she now sees Dr. Okafor at Riverside Clinic.",  # "Dr." ends no sentence
    "Dana is no longer on call.",
    "user: I moved to Leeds.",
])
def test_what_says_a_change(text: str):
    assert says_a_change(text)


@pytest.mark.parametrize("text", [
    "Lena lives in Berlin.",
    "We will be moved to the new office.",       # a plan
    "The CI has not switched to GitHub Actions.",  # not done
    "If we upgraded, the tests would break.",    # a condition
    "Have you moved yet?",                       # a question
    "I have lived here until now.",              # "now" looking back
    "Seven years now, and I've found my muse. Check out my pottery!",  # talk: several sentences
])
def test_what_says_no_change(text: str):
    assert not says_a_change(text)


def said(at: float, session: str = "a", source: str = "user", shared: bool = False, personal: bool = False,
         changes: bool = False) -> Said:
    return Said(at, session, source, shared, personal, changes)


def order(told: dict[int, Said], close: float = 0.7, apart: float = 0.0) -> list[int]:
    ranked = [Ranked(key, 1.0 - key / 10, {}) for key in sorted(told)]
    return [r.key for r in changed_after(ranked, told, lambda a, b: close, 0.6, apart)]


def test_the_change_takes_the_place_of_what_it_changed_and_the_rest_keep_their_order():
    explained = {"superseded": 1.0, "replaces": 1.0}
    ranked = [Ranked(1, 0.9, {**explained, "score": 0.9}), Ranked(2, 0.7, {}), Ranked(3, 0.5, {**explained})]
    told = {1: said(1.0), 2: said(2.0), 3: said(3.0, changes=True)}
    moved = changed_after(ranked, told, lambda a, b: 0.9 if {a, b} == {1, 3} else 0.1, 0.6, 0.0)
    assert [r.key for r in moved] == [3, 1, 2]
    assert moved[0].score == 0.9 and moved[0].components["replaces"] == pytest.approx(0.9 / 0.5)
    assert moved[1].score == pytest.approx(0.9, rel=0.01) and moved[1].score < 0.9
    assert moved[1].components["superseded"] == pytest.approx(moved[1].score / 0.9)


def test_a_change_of_several_takes_the_place_of_the_best_of_them():
    ranked = [Ranked(1, 0.9, {}), Ranked(2, 0.8, {}), Ranked(3, 0.7, {}), Ranked(4, 0.2, {})]
    told = {1: said(1.0), 2: said(2.0), 3: said(3.0), 4: said(4.0, changes=True)}
    moved = changed_after(ranked, told, lambda a, b: 0.9 if 4 in {a, b} and {a, b} != {3, 4} else 0.1, 0.6, 0.0)
    assert [r.key for r in moved] == [4, 1, 2, 3]
    assert moved[0].score == 0.9


def test_when_a_change_moves_what_it_changed():
    assert order({1: said(1.0), 2: said(2.0, changes=True)}) == [2, 1]
    assert order({1: said(1.0), 2: said(2.0, changes=True)}, close=0.5) == [1, 2]  # not about the same thing
    assert order({1: said(1.0), 2: said(2.0)}) == [1, 2]  # the newer says no change
    assert order({1: said(2.0, changes=True), 2: said(1.0)}) == [1, 2]  # already first
    assert order({1: said(1.0), 2: said(1.5, changes=True)}, apart=3600.0) == [1, 2]  # one episode: talk goes on


def test_who_may_change_whom():
    assert order({1: said(1.0, "a"), 2: said(2.0, "b", changes=True)}) == [1, 2]  # another session's private
    assert order({1: said(1.0, "a", shared=True), 2: said(2.0, "b", shared=True, changes=True)}) == [2, 1]
    # Another session's or source's "I moved" is another person's.
    mine = said(1.0, "a", shared=True, personal=True)
    assert order({1: mine, 2: said(2.0, "b", shared=True, personal=True, changes=True)}) == [1, 2]
    assert order({1: mine, 2: said(2.0, "a", "bot", shared=True, personal=True, changes=True)}) == [1, 2]
    assert order({1: mine, 2: said(2.0, "a", shared=True, personal=True, changes=True)}) == [2, 1]


def test_results_past_those_compared_keep_their_place():
    # Recall compares only its best CHANGES_AMONG results: the others are not in ``said``.
    ranked = [Ranked(1, 0.9, {}), Ranked(2, 0.8, {}), Ranked(3, 0.7, {})]
    told = {2: said(2.0), 3: said(3.0, changes=True)}
    assert [r.key for r in changed_after(ranked, told, lambda a, b: 0.9, 0.6, 0.0)] == [1, 3, 2]
