"""The sleep planner is pure: properties over generated memories, then each rule."""

from __future__ import annotations

import dataclasses
import os

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from mnemosyne.core.consolidation import (
    DAY,
    SHARED_SESSION,
    Plan,
    Record,
    SleepPolicy,
    StoredSummary,
    plan_consolidation,
    reachable_from_active,
    represented,
    sharing_key,
)
from mnemosyne.core.dedup import DupRules
from mnemosyne.core.fingerprint import content_hash
from mnemosyne.core.hold_back import count_changes, hold_back
from mnemosyne.core.summarise import extractive_summary, summary_header, without_quotes_of
from mnemosyne.testing import HashEmbedder

NOW = 1_800_000_000.0
WORDS = ["deploy", "database", "friday", "palette", "invoice", "budget", "server", "review", "font", "3", "7"]


def record(i: int, content: str, at: float, session: str = "s1", **kw) -> Record:
    fields = dict(
        id=f"m{i:04d}", session_id=session, scope="session", kind="episodic", status="active",
        content=content, content_hash=content_hash(content), importance=0.5, created_at=at,
    )
    fields.update(kw)
    return Record(**fields)


def apply(records: list[Record], plan: Plan) -> tuple[list[Record], list[tuple[str, str]]]:
    """Apply a plan in memory, as the store does, with new memories' ids = their keys."""
    out = [dataclasses.replace(r, **plan.updates.get(r.id, {})) for r in records]
    for s in plan.created:
        out.append(Record(
            id=s.key, session_id=s.session_id, scope=s.scope, kind=s.kind, status="active",
            content=s.content, content_hash=content_hash(s.content), importance=s.importance,
            created_at=s.created_at, strength=s.strength, last_seen_at=s.last_seen_at,
            episode_id=s.episode_id, occurrences=s.occurrences,
        ))
    return out, [(link.src, link.dst) for link in plan.links]


def summarised_ids(links: list[tuple[str, str]], records: list[Record]) -> set[str]:
    summaries = {r.id for r in records if r.kind == "summary"}
    return {dst for src, dst in links if src in summaries}


memory_lists = st.lists(
    st.tuples(
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=7),
        st.integers(0, 40 * 24),  # hours before NOW
        st.sampled_from(["s1", "s2"]),
        st.sampled_from(["session", "session", "global"]),
        st.sampled_from([0.1, 0.5, 0.85, 0.95]),
        st.booleans(),  # expires
    ),
    max_size=40,
)


def build(spec) -> list[Record]:
    return [
        record(i, " ".join(words), NOW - hours * 3600, session, scope=scope, importance=importance,
               valid_until=NOW - 1 if expires and i % 3 == 0 else None)
        for i, (words, hours, session, scope, importance, expires) in enumerate(spec)
    ]


@settings(max_examples=150, deadline=None)
@given(memory_lists)
def test_no_memory_is_ever_lost_and_a_second_plan_is_empty(spec):
    records = build(spec)
    plan = plan_consolidation(records, NOW)
    after, links = apply(records, plan)
    assert {r.id for r in records} <= {r.id for r in after}  # nothing deleted
    reachable = reachable_from_active(after, links)
    for r in after:
        assert r.status == "expired" or r.id in reachable, r
    # Every consolidated original is one hop from the memory that stands for it.
    targets = {dst for _, dst in links}
    assert all(r.id in targets for r in after if r.status in ("consolidated", "superseded"))

    again = plan_consolidation(after, NOW + 60, summarised=summarised_ids(links, after))
    assert again.empty, again


@settings(max_examples=60, deadline=None)
@given(memory_lists)
def test_no_session_loses_sight_of_anything(spec):
    """What a session could see before is still visible to it, directly or through a link."""
    records = build(spec)
    after, links = apply(records, plan_consolidation(records, NOW))
    by_id = {r.id: r for r in after}
    parents: dict[str, list[str]] = {}
    for src, dst in links:
        parents.setdefault(dst, []).append(src)

    def visible(r: Record, session: str) -> bool:
        return r.scope == "global" or r.session_id == session

    for before in records:
        for session in ("s1", "s2"):
            if not visible(before, session) or by_id[before.id].status != "consolidated":
                continue
            assert any(visible(by_id[p], session) for p in parents[before.id])


@settings(max_examples=150, deadline=None)
@given(memory_lists, st.data())
def test_a_plan_held_back_from_memories_changed_meanwhile_leaves_them_alone_and_loses_nothing(spec, data):
    records = build(spec)
    plan = plan_consolidation(records, NOW)
    strengths = {r.id: r.strength for r in records}
    assert count_changes(plan, strengths) == plan.counts
    changed = data.draw(st.sets(st.sampled_from([r.id for r in records]))) if records else set()
    kept, held = hold_back(plan, changed, strengths)
    assert changed <= held and not held & (set(kept.updates) | {s for new in kept.created for s in new.sources})
    assert kept.links == [link for link in plan.links if link in kept.links]  # a part of the plan, no more
    assert all(plan.updates[m] == c for m, c in kept.updates.items()) and set(kept.created) <= set(plan.created)
    after, links = apply(records, kept)
    assert [r for r in after if r.id in held] == [r for r in records if r.id in held]
    reachable = reachable_from_active(after, links)
    assert all(r.status == "expired" or r.id in reachable for r in after)
    targets = {dst for _, dst in links}
    assert all(r.id in targets for r in after if r.status in ("consolidated", "superseded"))


# One fact said again with words that add nothing ("reminder: ...", "... fyi"), now
# and then qualified. Being a repeat is not transitive ("reminder: X fyi" repeats
# "reminder: X" and "X fyi", which repeat neither each other nor "X"): where one
# sleep could leave merges for the next.
FACTS = ["staging database listens on port 5432", "the deploy window is not on Friday evening",
         "Alice approved the quarterly marketing budget"]
LEAD_INS = ["", "reminder: ", "fyi ", "Fyi "]
QUALIFIERS = [("", "")] * 6 + [("Cancelled: ", ""), ("", "?")]
TAILS = ["", " fyi", " fyi."]
restatements = st.lists(
    st.tuples(
        st.sampled_from(LEAD_INS), st.sampled_from(QUALIFIERS), st.sampled_from(TAILS),
        st.integers(1, 240),  # minutes after the one before
        st.sampled_from(["s1", "s2", "s3"]),
        st.sampled_from(["session", "global"]),
        st.sampled_from([0.2, 0.5, 0.95]),
    ),
    min_size=2, max_size=10,
)
SHARING = [{}, {"promote_importance": 0.9}, {"promote_recurring": True},
           {"promote_recurring": True, "promote_importance": 0.9}]


@settings(max_examples=500, deadline=None)
@given(st.sampled_from(FACTS), restatements, st.sampled_from(SHARING), st.booleans())
# Two global copies, each kept by a group of texts the other does not repeat.
@example(FACTS[0], [("reminder: ", ("", ""), "", 1, "s1", "session", 0.5),
                    ("", ("", ""), "", 1, "s1", "session", 0.5),
                    ("", ("", ""), " fyi", 1, "s1", "global", 0.5),
                    ("reminder: ", ("", ""), " fyi", 1, "s1", "global", 0.5)], {}, False)
@example(FACTS[1], [("fyi ", ("", ""), "", 60, "s1", "session", 0.5),
                    ("Fyi ", ("", ""), " fyi.", 60, "s3", "session", 0.5),
                    ("fyi ", ("", ""), "", 60, "s2", "global", 0.5),
                    ("Fyi ", ("", ""), " fyi.", 30, "s2", "global", 0.5)], {"promote_recurring": True}, False)
def test_restatements_merge_in_one_sleep_and_only_with_their_own_meaning(fact, spec, sharing, with_vectors):
    records, meaning = [], {}
    at = NOW - 20 * DAY
    for i, (lead_in, (before, after), tail, minutes, session, scope, importance) in enumerate(spec):
        at += minutes * 60
        text = lead_in + before + fact + after + ("" if after == "?" else tail)
        records.append(record(i, text, at, session, scope=scope, importance=importance))
        meaning[records[-1].id] = (before, after)
    policy = SleepPolicy(min_episode_size=10, **sharing)

    def vectors(of: list[Record]):
        if not with_vectors:
            return None
        return dict(zip([r.id for r in of], HashEmbedder().embed([r.content for r in of]), strict=True))

    plan = plan_consolidation(records, NOW, policy, vectors=vectors(records))
    first_source = {new.key: new.sources[0] for new in plan.created}
    by_id = {r.id: r for r in records}
    for link in (link for link in plan.links if link.kind == "merges"):
        keeper, merged = by_id[first_source.get(link.src, link.src)], by_id[link.dst]
        assert meaning[keeper.id] == meaning[merged.id], (keeper.content, merged.content)
        assert policy.promote_recurring or keeper.session_id == merged.session_id
    after, links = apply(records, plan)
    reachable = reachable_from_active(after, links)
    assert all(r.status == "expired" or r.id in reachable for r in after)
    again = plan_consolidation(after, NOW + 60, policy, vectors=vectors(after),
                               summarised=summarised_ids(links, after))
    assert again.empty, again


def test_merge_keeps_earliest_time_latest_sighting_count_and_highest_importance():
    text = "Caroline said the charity race raised money for mental health"
    records = [
        record(1, text, NOW - 9 * DAY, importance=0.3),
        record(2, "caroline said the charity race raised money for mental health!", NOW - 5 * DAY,
               importance=0.7),
        record(3, "As I said, Caroline said the charity race raised money for mental health", NOW - 2 * DAY,
               importance=0.4),
        # A word inside it qualifies it: not the same thing said again.
        record(5, "Caroline said the charity race raised no money for mental health", NOW - 2 * DAY),
        record(6, "Caroline said the charity race raised little money for mental health", NOW - 2 * DAY),
        record(4, "The charity race is on Sunday", NOW - 2 * DAY),
    ]
    plan = plan_consolidation(records, NOW, SleepPolicy(min_episode_size=10))
    canonical = plan.updates["m0001"]
    assert canonical["occurrences"] == 3
    assert canonical["last_seen_at"] == NOW - 2 * DAY
    assert canonical["importance"] == 0.7
    assert "created_at" not in canonical  # already the earliest
    assert plan.updates["m0002"]["status"] == plan.updates["m0003"]["status"] == "consolidated"
    for other in ("m0004", "m0005", "m0006"):
        assert other not in plan.updates or "status" not in plan.updates[other]
    assert plan.counts["merged"] == 2


def test_a_global_copy_said_later_keeps_its_place_in_the_timeline():
    text = "The staging cluster is named Orion"
    records = [record(1, text, NOW - 9 * DAY), record(2, text, NOW - 4 * DAY, scope="global", importance=0.8)]
    plan = plan_consolidation(records, NOW, SleepPolicy(min_episode_size=10))
    assert plan.updates["m0001"]["status"] == "consolidated"
    assert plan.updates["m0002"]["occurrences"] == 2 and "created_at" not in plan.updates["m0002"]

@pytest.mark.parametrize("importances", [(0.5, 0.95), (0.95, 0.5)])
def test_a_fact_promoted_by_this_sleep_still_supersedes_or_is_superseded_in_its_session(importances):
    dana, bob = importances
    records = [record(1, "The on-call engineer is Dana.", NOW - 2 * 3600, importance=dana),
               record(2, "The on-call engineer is Bob.", NOW - 3600, importance=bob)]
    promoting = SleepPolicy(promote_importance=0.9)
    plan = plan_consolidation(records, NOW, promoting)
    assert plan.updates["m0001"]["status"] == "superseded" and plan.counts["superseded"] == 1
    after, links = apply(records, plan)
    assert plan_consolidation(after, NOW + 60, promoting, summarised=summarised_ids(links, after)).empty


def test_a_fact_promoted_by_this_sleep_supersedes_a_global_one_now_not_at_the_next():
    records = [record(1, "The primary region is eu-west.", NOW - 2 * 3600, scope="global"),
               record(2, "The primary region is us-east.", NOW - 3600, importance=0.95)]
    promoting = SleepPolicy(promote_importance=0.9)
    plan = plan_consolidation(records, NOW, promoting)
    assert plan.updates["m0001"]["status"] == "superseded" and plan.updates["m0002"]["scope"] == "global"
    after, links = apply(records, plan)
    assert plan_consolidation(after, NOW + 60, promoting, summarised=summarised_ids(links, after)).empty

def test_a_global_fact_is_superseded_by_a_newer_global_value_another_session_wrote():
    records = [record(1, "The API rate limit is 100 requests per minute.", NOW - 60 * DAY,
                      session="acme", scope="global"),
               record(2, "The API rate limit is 300 requests per minute.", NOW - 5 * DAY,
                      session="globex", scope="global")]
    plan = plan_consolidation(records, NOW, SleepPolicy(min_episode_size=10))
    assert plan.updates["m0001"]["status"] == "superseded"
    assert [(link.src, link.dst) for link in plan.links if link.kind == "supersedes"] == [("m0002", "m0001")]
    after, links = apply(records, plan)
    assert plan_consolidation(after, NOW + 60, SleepPolicy(min_episode_size=10),
                              summarised=summarised_ids(links, after)).empty


@pytest.mark.parametrize(("older", "newer"), [
    # Who sees what: a private value is its session's alone; it neither hides a value
    # every session sees nor is hidden by one another session wrote.
    (("acme", "session"), ("globex", "global")),
    (("acme", "global"), ("globex", "session")),
    (("acme", "global"), ("acme", "session")),
    (("acme", "session"), ("globex", "session")),
])
def test_a_private_value_supersedes_no_global_one_nor_another_sessions(older, newer):
    records = [record(1, "The API rate limit is 100 requests per minute.", NOW - 60 * DAY,
                      session=older[0], scope=older[1]),
               record(2, "The API rate limit is 300 requests per minute.", NOW - 5 * DAY,
                      session=newer[0], scope=newer[1])]
    assert plan_consolidation(records, NOW, SleepPolicy(min_episode_size=10)).counts["superseded"] == 0


@pytest.mark.parametrize(("older", "newer"), [
    ("My email is ana@oldmail.com.", "My email is bo@newmail.io."),
    ("The user's timezone is CET.", "The user's timezone is PST."),
    ("Our office is in Leeds.", "Our office is in Bristol."),
    ("The customer's plan is Pro.", "The customer's plan is Enterprise."),
])
def test_global_facts_of_whoever_each_session_speaks_for_are_superseded_only_within_it(older, newer):
    # Two sessions' "my email" are two people's, however global.
    records = [record(1, older, NOW - 9 * DAY, session="acme", scope="global"),
               record(2, newer, NOW - 5 * DAY, session="globex", scope="global")]
    assert plan_consolidation(records, NOW, SleepPolicy(min_episode_size=10)).counts["superseded"] == 0
    records[1] = dataclasses.replace(records[1], session_id="acme")
    assert plan_consolidation(records, NOW, SleepPolicy(min_episode_size=10)).counts["superseded"] == 1


def test_numbers_keep_near_identical_texts_apart():
    records = [record(i, f"Finished step {i} of the database migration today", NOW - DAY * 3 + i)
               for i in range(3)]
    plan = plan_consolidation(records, NOW, SleepPolicy(min_episode_size=10))
    assert plan.counts["merged"] == 0


def test_the_same_numbers_in_another_order_are_another_fact():
    texts = ["Order 3 ships in 7 days to the Lisbon warehouse", "Order 7 ships in 3 days to the Lisbon warehouse"]
    records = [record(i, t, NOW - DAY * 3 + i) for i, t in enumerate(texts)]
    plan = plan_consolidation(records, NOW, SleepPolicy(min_episode_size=10))
    assert plan.counts["merged"] == 0


@pytest.mark.parametrize("texts", [
    ["Alice approved the quarterly budget for project Falcon at the review",
     "Carol approved the quarterly budget for project Falcon at the review"],
    ["Moved the staging cluster to the region east after the outage",
     "Moved the staging cluster to the region west after the outage"],
])
def test_a_word_swapped_for_another_is_another_fact(texts: list[str]):
    records = [record(i, t, NOW - DAY * 3 + i) for i, t in enumerate(texts)]
    plan = plan_consolidation(records, NOW, SleepPolicy(min_episode_size=10))
    assert plan.counts["merged"] == 0


def test_unrelated_descriptions_of_one_subject_supersede_nothing():
    records = [record(1, "Dana is the on-call engineer this week.", NOW - 3 * DAY),
               record(2, "Dana is allergic to peanuts.", NOW - 2 * DAY)]
    plan = plan_consolidation(records, NOW, SleepPolicy(min_episode_size=10))
    assert plan.counts["superseded"] == 0


@pytest.mark.parametrize(("older", "newer"), [
    ("Bob is allergic to peanuts.", "Bob is allergic to shellfish."),  # said of a person: described
    ("Alice is the tech lead.", "Alice is on vacation."),
    ("My birthday is May 3.", "Our birthday is June 5."),  # whose: part of the subject
    ("The price before tax is 40 dollars.", "The price after tax is 48 dollars."),
    ("The speed limit in town is 30 mph.", "The speed limit out of town is 60 mph."),
    ("The meeting is at 10am.", "The meeting is in room 4."),  # when, then where
    ("Her birthday is May 3.", "Her birthday is June 5."),  # whose? not said
    ("The service that is slow is billing.", "The service that is down is auth."),  # which service?
    # Values of another kind: when, then where or what; names, then numbers; other units.
    ("The launch party is on Friday.", "The launch party is on the rooftop."),
    ("The meeting is at 10am.", "The meeting is at headquarters."),
    ("The conference is in May.", "The conference is in Berlin."),
    ("My kids are Tom and Anna.", "My kids are 5 and 7."),
    ("The CEO is Jane Doe.", "The CEO is 54."),
    ("The rate limit is 100 per minute.", "The rate limit is 5000 per day."),
    ("The rate limit is 100 requests per minute.", "The rate limit is 5000 requests per day."),
    ("The rate limit is 100 requests per minute.", "The rate limit is 100 tokens per minute."),
    # A number followed by more than its unit's words starts a description.
    ("The plan is 3 steps to rewrite the auth service.", "The plan is 5 steps to rewrite the billing service."),
    ("The answer is 42 because the tests say so.", "The answer is 43 because the docs say so."),
    ("The rate limit is 100 requests per minute per user.", "The rate limit is 200 requests per minute per IP."),
    # A bracket that qualifies the value is part of it; an aside is not the fact.
    ("The price is 59 USD (excluding VAT).", "The price is 70 USD (including VAT)."),
    ("The limit is 100 (per user).", "The limit is 1000 (per org)."),
    ("The price is 59 USD (VAT included).", "The price is 50 USD (VAT excluded)."),
    ("The API rate limit is 100/min.", "The API rate limit is 5000/day."),
    ("The Pro plan price is $45/month.", "The Pro plan price is $400/year."),
    ("The office wifi password is hunter2.", "The office wifi password is case sensitive."),
    ("The bug appears only when the user is logged in.", "The bug appears only when the user is logged out."),
    ("The release is a mess.", "The release is a success."),  # described, not valued
    ("The cache is warm.", "The cache is not the problem."),  # not that value: which one holds?
    ("The cache is not the problem.", "The cache is warm."),
    ("The owner is not Bob.", "The owner is Alice."),
    ("The beta flag is not enabled.", "The beta flag is not visible."),
    # A change not done, or of something else: a plan, a question, a negation, a
    # person, a list, another subject.
    ("The CI is Jenkins.", "We will move the CI to GitHub Actions."),
    ("The CI is Jenkins.", "We plan to switch the CI to GitHub Actions."),
    ("The CI is Jenkins.", "Should we switch the CI to GitHub Actions?"),
    ("The CI is Jenkins.", "Has the CI moved to GitHub Actions?"),
    ("The CI is Jenkins.", "The CI has not moved to GitHub Actions."),
    ("The CI is Jenkins.", "The CI hasn't moved to GitHub Actions yet."),
    ("The CI is Jenkins.", "The CI will be moved to GitHub Actions."),
    ("The CI is Jenkins.", "We didn't switch the CI to GitHub Actions."),
    ("The CI is Jenkins.", "If we move the CI to GitHub Actions, builds get faster."),
    ("The CI is Jenkins.", "Moved the CI and the docs to GitHub Actions."),
    ("The CI is Jenkins.", "Switched the docs site to GitHub Pages."),
    ("The release manager is Tom.", "Tom moved to the data team."),
    ("The billing database is Postgres 15.", "Upgraded Python, Node and Go to the latest versions."),
    ("The billing database is Postgres 15.", "The billing database moved to Frankfurt."),  # where, not which
    ("The nightly job is at 1am.", "The payments team moved the nightly job to 2am to avoid the backups."),
])
def test_facts_about_other_things_do_not_supersede_each_other(older: str, newer: str):
    records = [record(1, older, NOW - 3 * DAY), record(2, newer, NOW - 2 * DAY)]
    assert plan_consolidation(records, NOW, SleepPolicy(min_episode_size=10)).counts["superseded"] == 0


@pytest.mark.parametrize(("older", "newer"), [
    ("The deploy window is Friday evening.", "The deploy window is Monday morning."),
    ("The meeting is at 10am.", "The meeting is at noon."),
    ("The office is in Frankfurt.", "The office is in Dublin."),
    ("The rate limit is 100 per minute.", "The rate limit is 250 per minute."),
    # A number with the words of its unit is one value, however many they are.
    ("The rate limit is 100 requests per minute.", "The rate limit is 200 requests per minute."),
    ("The build server is 2 GB of RAM.", "The build server is 8 GB of RAM."),
    ("The quota is five hundred calls a day.", "The quota is 800 calls a day."),
    ("The CEO is Jane Doe.", "The CEO is Bob Smith."),
    ("The Python version is 3.12.", "The Python version is 3.13."),
    # Values with dots and colons inside: addresses, hosts, links, times.
    ("My email is alice@oldmail.com.", "My email is alice@newmail.io."),
    ("The staging host is stg-01.internal", "The staging host is stg-02.internal"),
    ("Our docs site is https://docs.acme.com", "Our docs site is https://help.acme.io/guide"),
    ("The standup time is 9:30.", "The standup time is 10:15."),
    ("The standup is at 9:30.", "The standup is at 10am."),  # a clock either way
    ("The call is at 14:00 UTC.", "The call is at 3pm UTC."),
    ("The endpoint is 10.0.0.5:80", "The endpoint is 10.0.0.6:8080"),  # a port, not a time
    # Values that begin as an article would: "a@", "A-12", a lone letter.
    ("My email is a@x.com", "My email is b@y.com"),
    ("The meeting room is B-12", "The meeting room is A-12"),
    ("My blood type is A", "My blood type is B"),
    # Said as a change or a correction.
    ("My email is alice@oldmail.com", "My email changed to alice@newmail.io"),
    ("The team lead is Dana.", "Correction: the team lead is now Priya."),
    ("The budget is 5000.", "Actually, the budget has changed to 6500."),
    ("The user’s name is Ann.", "The user's name is Bo."),  # one apostrophe or another
    # A correction that says more after the value: a second clause, an aside in brackets.
    ("The release manager is Tom.", "The release manager is now Priya; Tom moved to the data team."),
    ("The staging host is staging-1.internal.",
     "The staging host is now stg-eu-2.internal (staging-1 was decommissioned)."),
    ("The refund limit is 5000 EUR.", "The refund limit is 10000 EUR (raised by finance on Nov 16)."),
    ("The on-call engineer is Dana.", "The on-call engineer is now Bo \u2014 Dana is on leave."),
    ("The host is db-1 (primary since May).", "The host is db-2."),
    ("The API rate limit is 100 requests per minute per token.",
     "The API rate limit is 300 requests per minute per token."),
    # The same kind however written: number words, "3 pm", symbols for units, "a month".
    ("The sprint length is two weeks.", "The sprint length is 3 weeks."),
    ("The meeting is at 3 pm.", "The meeting is at 4pm."),
    ("The price is 40 dollars.", "The price is $45."),
    ("The discount is 10 percent.", "The discount is 15%."),
    ("The rent is 1200 per month.", "The rent is 1300 a month."),
    ("The launch is March 3.", "The launch is 2026-03-10."),
    # Clause words that name the attribute, not a condition.
    ("The person who owns billing is Dana.", "The person who owns billing is Bob."),
    ("The deadline for that project is Friday.", "The deadline for that project is Monday."),
    ("The only approver is Alice.", "The only approver is Bob."),
    # A value said not to hold, and said to hold again.
    ("The beta flag is enabled.", "The beta flag is not enabled."),
    ("The beta flag is enabled.", "The beta flag is not enabled yet."),
    ("The beta flag is not enabled.", "The beta flag is enabled."),
    # A change done, in other verbs: the new value, as "is now" says it.
    ("The billing database is Postgres 15.", "The billing database moved to Postgres 16."),
    ("The billing database is Postgres 15.", "Migrated the billing database to Postgres 16 last week."),
    ("The CI is Jenkins.", "Switched the CI to GitHub Actions."),
    ("The CI is Jenkins.", "We switched the CI from Jenkins to GitHub Actions."),
    ("The CI is Jenkins.", "The CI has moved to GitHub Actions."),
    ("The Python version is 3.11.", "Upgraded the Python version to 3.12."),
    ("The repo is payments-api.", "The repo was renamed to ledger-core."),
    ("The staging host is staging-1.internal.", "The staging host moved to stg-eu-2.internal on Monday."),
    ("The billing database moved to Postgres 15.", "The billing database moved to Postgres 16."),
    ("The Pro plan price is 49 USD per seat per month.",
     "The Pro plan price changed to 59 USD per seat per month from November 1; existing customers keep 49 USD."),
])
def test_a_newer_value_of_the_same_kind_supersedes(older: str, newer: str):
    records = [record(1, older, NOW - 3 * DAY), record(2, newer, NOW - 2 * DAY)]
    assert plan_consolidation(records, NOW, SleepPolicy(min_episode_size=10)).counts["superseded"] == 1


@pytest.mark.parametrize(("older", "newer"), [
    ("We deploy on Friday?", "We deploy on Friday."),
    ("The integration tests pass locally now.", "The integration tests pass locally now?"),
    ("Caroline: The adoption agency called back today", 'Caroline: The adoption agency called back today?"'),
    ("We deploy the billing service on Friday.", "We deploy the billing service on Friday?!"),
    ("We deploy the billing service on Friday.", "We deploy the billing service on Friday? \U0001f914"),
    ("We deploy the billing service on Friday.", "We deploy the billing service on Friday\uff1f"),
])
def test_a_question_and_a_statement_in_the_same_words_are_two_memories(older: str, newer: str):
    records = [record(0, older, NOW - 3 * DAY), record(1, newer, NOW - 2 * DAY)]
    assert plan_consolidation(records, NOW, SleepPolicy(min_episode_size=10)).counts["merged"] == 0


@pytest.mark.parametrize(("older", "newer", "merged"), [
    ("Password: hunter2", "Password: Hunter2", 0),  # the case of an identifier is what it says
    ("The API token for staging is ABCdef123", "The API token for staging is abcDEF123", 0),
    ("The sync job runs at NASA site", "The sync job runs at nasa site", 0),
    ("Deploy the billing service on Friday evening", "deploy the billing service on friday evening", 1),
    ("Ship it", "ship it", 1),
])
def test_case_tells_two_texts_apart_only_where_a_word_keeps_it(older: str, newer: str, merged: int):
    records = [record(0, older, NOW - 3 * DAY), record(1, newer, NOW - 2 * DAY)]
    assert plan_consolidation(records, NOW, SleepPolicy(min_episode_size=10)).counts["merged"] == merged


def test_a_value_said_not_to_hold_then_said_again_is_current_again():
    texts = ["The beta flag is enabled.", "The beta flag is not enabled.", "The beta flag is enabled."]
    records = [record(i, t, NOW - 3 * DAY + i * 60) for i, t in enumerate(texts)]
    plan = plan_consolidation(records, NOW, SleepPolicy(min_episode_size=10))
    statuses = [plan.updates.get(r.id, {}).get("status", "active") for r in records]
    assert statuses == ["superseded", "superseded", "active"]


def test_a_speaker_saying_it_again_with_a_lead_in_merges():
    records = [record(0, "Caroline: I went to the support group yesterday and it was so powerful.", NOW - 3 * DAY),
               record(1, "Caroline: As I said, I went to the support group yesterday and it was so powerful!!",
                      NOW - 3 * DAY + 60),
               record(2, "Melanie: I went to the support group yesterday and it was so powerful.", NOW - 3 * DAY + 90)]
    plan = plan_consolidation(records, NOW, SleepPolicy(min_episode_size=10))
    assert plan.updates["m0001"]["status"] == "consolidated" and plan.counts["merged"] == 1


@pytest.mark.parametrize(("older", "newer"), [
    ("The user\u2019s favourite editor is Vim for Python work", "The user's favourite editor is Vim for Python work"),
    ("Alice said \u201cship it\u201d after the release review", 'Alice said "ship it" after the release review'),
    ("Meeting at the cafe\u0301 near the office every week", "Meeting at the caf\u00e9 near the office every week"),
])
def test_two_ways_of_typing_one_text_merge(older: str, newer: str):
    records = [record(0, older, NOW - 3 * DAY), record(1, newer, NOW - 3 * DAY + 60)]
    assert plan_consolidation(records, NOW, SleepPolicy(min_episode_size=10)).counts["merged"] == 1


def test_a_summary_stands_only_for_sentences_it_quotes_word_for_word():
    texts = ["Feature flag checkout_v2 turned on for beta users.",
             "Feature flag checkout_v2 turned off for beta users.",
             "Alice owes Bob 40 EUR for the team lunch.", "Bob owes Alice 40 EUR for the team lunch.",
             "Acme will renew the enterprise contract this year.", "Acme will not renew the enterprise contract.",
             "The invoice payment did not go through on the first try."]
    records = [record(i, t, NOW - 3 * DAY + i * 60) for i, t in enumerate(texts)]
    plan = plan_consolidation(records, NOW, SleepPolicy(summary_max_sentences=4))
    (summary,) = plan.created
    for r in records:
        folded = plan.updates.get(r.id, {}).get("status") == "consolidated"
        assert folded == (r.content in summary.content), r.content


def test_a_newer_value_supersedes_one_behind_a_summary_which_stops_quoting_it_in_the_same_change():
    texts = ["Rollout of v2 started on the west cluster.", "The staging database host is db-staging-2.internal.",
             "Rollout of v2 finished without errors on the west cluster."]
    records = [record(i, t, NOW - 5 * DAY + i * 60) for i, t in enumerate(texts)]
    first = plan_consolidation(records, NOW - 3 * DAY)
    after, links = apply(records, first)
    (summary,) = first.created
    assert all(r.status == "consolidated" for r in after if r.kind != "summary")
    after.append(record(9, "The staging database host is db-staging-3.internal.", NOW - DAY))
    stored = {summary.key: StoredSummary(summary.sources, {"consolidate": "represented"})}
    plan = plan_consolidation(after, NOW, summarised=summary.sources, stored_summaries=stored)
    assert plan.updates["m0001"]["status"] == "superseded"
    assert plan.updates[summary.key]["content"] == without_quotes_of(summary.content, texts[1], [texts[0], texts[2]])
    assert count_changes(plan, {r.id: r.strength for r in after}) == plan.counts
    # Stopping the quote and superseding the value go in together, or wait together.
    for changed in ("m0001", "m0009", summary.key):
        kept, held = hold_back(plan, {changed}, {r.id: r.strength for r in after})
        assert not {"m0001", summary.key} & set(kept.updates) and not kept.links
    done, links = apply(after, plan)
    assert plan_consolidation(done, NOW + 60, summarised=summary.sources, stored_summaries=stored).empty


def test_a_summary_quotes_only_the_events_it_hides_and_is_not_made_to_hide_nothing():
    texts = ["Opened the ledger rate limit module to read the docstring.",
             "Decision: use Redis for rate limiting via the RateLimiter class.",
             "Ran the linter on the ledger rate limit module with no issues."]
    records = [record(i, t, NOW - 3 * DAY + i * 60, importance=0.9 if i == 1 else 0.3) for i, t in enumerate(texts)]
    plan = plan_consolidation(records, NOW)
    (summary,) = plan.created
    assert texts[1] not in summary.content and texts[0] in summary.content and summary.importance == 0.3
    assert summary.sources == ("m0000", "m0001", "m0002") and "status" not in plan.updates["m0001"]
    assert plan.counts["summarised"] == 2
    important = [dataclasses.replace(r, importance=0.9) for r in records]
    plan = plan_consolidation(important, NOW)
    assert not plan.created and not plan.links and plan.counts["summaries"] == 0


def test_a_text_forgotten_as_shared_is_not_folded_across_sessions_by_a_global_copy():
    text = "The VPN gateway for the Berlin office is vpn-ber.example.net"
    records = [record(1, text, NOW - 3 * DAY, session="s1", scope="global", importance=0.95),
               record(2, text, NOW - 3 * DAY + 60, session="s2")]
    plan = plan_consolidation(records, NOW, SleepPolicy(min_episode_size=10), unshared={sharing_key(text)})
    assert plan.counts["merged"] == 0


def test_a_number_said_of_a_one_word_subject_is_a_newer_value():
    records = [record(1, "Budget is 5000.", NOW - 3 * DAY), record(2, "Budget is 7000.", NOW - 2 * DAY)]
    plan = plan_consolidation(records, NOW, SleepPolicy(min_episode_size=10))
    assert plan.updates["m0001"]["status"] == "superseded"


def test_a_fact_with_an_expiry_supersedes_nothing():
    # Once it expired, the fact it replaced would be current again, yet hidden.
    records = [record(1, "The on-call engineer is Alice.", NOW - 3 * DAY),
               dataclasses.replace(record(2, "The on-call engineer is Bob.", NOW - 2 * DAY), valid_until=NOW + DAY)]
    assert plan_consolidation(records, NOW, SleepPolicy(min_episode_size=10)).counts["superseded"] == 0
    records.append(record(3, "The on-call engineer is Cy.", NOW - DAY))
    plan = plan_consolidation(records, NOW, SleepPolicy(min_episode_size=10))
    assert plan.updates["m0001"]["status"] == "superseded" and "status" not in plan.updates.get("m0002", {})


def test_shared_facts_are_not_superseded_by_each_other():
    # Each stands for several sessions: a later one is not one session's newer value.
    records = [record(1, "The beta server is degraded.", NOW - 3 * DAY, session=SHARED_SESSION, scope="global"),
               record(2, "The beta server is offline.", NOW - 2 * DAY, session=SHARED_SESSION, scope="global")]
    plan = plan_consolidation(records, NOW, SleepPolicy(min_episode_size=10))
    assert plan.counts["superseded"] == 0


def test_vectors_merge_restatements_that_words_alone_would_not():
    # Too many added words for the word rule; one text adds them to the other, around
    # it. Words that qualify it keep it apart, however alike the vectors.
    texts = ["deploy friday evening server", "as i said deploy friday evening server again",
             "budget review invoice", "deploy friday evening server cancelled"]
    records = [record(i, t, NOW - 3 * DAY + i * 7200) for i, t in enumerate(texts)]
    policy = SleepPolicy(min_episode_size=10)
    assert plan_consolidation(records, NOW, policy).counts["merged"] == 0
    vectors = dict(zip([r.id for r in records], HashEmbedder(64).embed(texts), strict=True))
    merged = plan_consolidation(records, NOW, dataclasses.replace(
        policy, duplicates=dataclasses.replace(policy.duplicates, cosine=0.75)), vectors=vectors)
    assert merged.counts["merged"] == 1 and merged.updates["m0001"]["status"] == "consolidated"


@pytest.mark.parametrize(("older", "newer"), [
    ("We use Redis for the session cache in the API", "We don't use Redis for the session cache in the API"),
    ("The billing service cannot reach the primary database", "The billing service can reach the primary database"),
    ("The tests pass locally but fail in CI", "The tests fail locally but pass in CI"),
    ("Set the request timeout to 30 seconds", "Set the request timeout to 30 minutes"),
    ("Run the database migration before the deploy", "Run the database migration after the deploy"),
    ("The legacy engine for the game is written in C++ code", "The legacy engine for the game is written in C# code"),
    ("Set the UTC offset of the reports to -5 hours", "Set the UTC offset of the reports to +5 hours"),
    # The later one drops an item (news), or qualifies the earlier from inside it.
    ("Open blockers: flaky auth test, broken CSV export, slow login", "Open blockers: flaky auth test, slow login"),
    ("Alice is the payments team lead this quarter", "Alice is the former payments team lead this quarter"),
    ("The integration tests pass on Linux and macOS runners", "The integration tests only pass on Linux and macOS"),
    ("Der Kunde will den Vertrag im Sommer verlängern", "Der Kunde will den Vertrag im Sommer nicht verlängern"),
    ("Auth rule: if (user.isAdmin) return deny(req);", "Auth rule: if (!user.isAdmin) return deny(req);"),
    ("Ship the Acme order to the Lyon depot in boxes", "Ship the Acme order to the Lyon depot in fifteen boxes"),
    # ... or at its ends: only words that say it again may be added there.
    ("We deploy the billing service on Friday evening in Frankfurt.",
     "Cancelled: we deploy the billing service on Friday evening in Frankfurt."),
    ("Alice approved the marketing budget for the launch.", "Alice approved the marketing budget for the launch cut."),
    ("Pode fazer deploy do serviço de pagamentos na sexta à noite.",
     "Não pode fazer deploy do serviço de pagamentos na sexta à noite."),
    ("Деплоить сервис платежей в пятницу вечером можно?", "Деплоить сервис платежей в пятницу вечером можно? Нет."),
    # A symbol may be a status; a restating word next to the text may become part of it.
    ("Deploy the billing service to production tonight", "Deploy the billing service to production tonight 🚫"),
    ("All integration tests pass on the release branch", "All integration tests pass on the release branch ❌"),
    ("The payment migration to the new cluster is complete", "The payment migration to the new cluster is complete 👍"),
    ("Customer data is encrypted at rest in the primary database", "Customer data is encrypted at rest in the "
     "primary database ⚠️"),
    ("The staging database server crashed overnight", "Just the staging database server crashed overnight"),
    ("approved the marketing budget increase for Q3", "I approved the marketing budget increase for Q3"),
    ("approved the marketing budget increase for Q3", "As you said, you approved the marketing budget increase for Q3"),
    ("The customer wants the invoice sent to accounting", "The customer wants the invoice sent to accounting before"),
])
def test_texts_alike_but_saying_different_things_never_merge(older: str, newer: str):
    records = [record(0, older, NOW - 3 * DAY), record(1, newer, NOW - 3 * DAY + 60)]
    policy = SleepPolicy(min_episode_size=10, duplicates=DupRules(cosine=0.0))  # any two vectors "alike"
    vectors = dict(zip([r.id for r in records], HashEmbedder(64).embed([older, newer]), strict=True))
    assert plan_consolidation(records, NOW, policy).counts["merged"] == 0
    assert plan_consolidation(records, NOW, policy, vectors=vectors).counts["merged"] == 0


@pytest.mark.parametrize("restated", [
    "As I said, the billing service deploys on Friday evening in Frankfurt.",
    "Reminder: the billing service deploys on Friday evening in Frankfurt.",
    "The billing service deploys on Friday evening in Frankfurt, just so you know.",
    "— The billing service deploys on Friday evening in Frankfurt —",
    "As I said before: the billing service deploys on Friday evening in Frankfurt!",
])
def test_words_that_only_say_it_again_merge(restated: str):
    records = [record(0, "The billing service deploys on Friday evening in Frankfurt.", NOW - 3 * DAY),
               record(1, restated, NOW - 3 * DAY + 60)]
    policy = SleepPolicy(min_episode_size=10, duplicates=DupRules(jaccard=0.5))
    assert plan_consolidation(records, NOW, policy).counts["merged"] == 1


def test_closed_episode_gets_a_bounded_extractive_summary_linked_to_every_source():
    texts = [f"Turn {i}: the redesign of the checkout page needs a new palette and font choice number {i}."
             for i in range(30)]
    records = [record(i, t, NOW - 3 * DAY + i * 60) for i, t in enumerate(texts)]
    records.append(record(99, "Remember the client deadline is the 14th", NOW - 3 * DAY + 31 * 60,
                          importance=0.9, scope="global"))
    plan = plan_consolidation(records, NOW, SleepPolicy(summary_max_chars=400))
    (summary,) = plan.created
    assert len(summary.content) <= 400
    assert summary.content.startswith("Summary of episode (30 events")
    assert set(summary.sources) == {r.id for r in records[:30]}
    assert {(link.src, link.dst) for link in plan.links if link.kind == "summarises"} == {
        (summary.key, r.id) for r in records[:30]}
    # It stands for the turns it quotes; one whose number it leaves out stays in view.
    for i, r in enumerate(records[:30]):
        quoted = f"number {i}." in summary.content
        assert (plan.updates.get(r.id, {}).get("status") == "consolidated") == quoted
    assert any(f"number {i}." in summary.content for i in range(30))
    assert "m0099" not in plan.updates or "status" not in plan.updates["m0099"]  # global stays in view


def test_a_summary_quotes_no_line_that_only_announces_what_follows():
    trace = "Traceback (most recent call last):\n  File \"refunds.py\", line {n}, in refund\nKeyError: 'refund_id'"
    texts = ["Ran the refund tests", trace.format(n=42), trace.format(n=57), "Fixed the KeyError in refunds"]
    summary = extractive_summary(texts, max_sentences=3).text
    assert "Traceback" not in summary and "):" not in summary and "KeyError" in summary


def test_a_summary_quotes_the_same_sentences_in_every_process():
    # Events alike but for their numbers tie on every word that counts: the earliest
    # win, whatever order the hash seed gives their sets of words.
    import subprocess
    import sys

    code = (
        "from mnemosyne.core.summarise import extractive_summary\n"
        "texts = [f'Order {1100 + i} shipped from the Berlin warehouse to customer account {5000 + 7 * i}'\n"
        "         for i in range(30)]\n"
        "print(extractive_summary(texts, max_chars=1200, max_sentences=8).quoted)\n"
    )
    quoted = {
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60,
                       env={**os.environ, "PYTHONHASHSEED": str(seed)}).stdout
        for seed in range(12)
    }
    assert quoted == {"(0, 1, 2, 3, 4, 5, 6, 7)\n"}


def test_a_summary_passes_over_sentences_too_long_for_what_is_left_of_its_budget():
    texts = [
        "Checkout redesign kickoff: palette, font, icons.",
        "The checkout redesign needs the new palette, the new font, the new icons and the new layout for the "
        "payment page.",
        "Palette approved by design.",
        "Font licence for the checkout bought.",
        "Icons for the payment page drawn.",
        "Layout of the payment page reviewed.",
    ]
    summaries = [extractive_summary(texts, header="ops: ", max_chars=n, max_sentences=4) for n in (100, 140, 200)]
    assert [(s.text, s.quoted) for s in summaries] == [
        # The best sentence alone is too long: it is the one quote cut to fit.
        ("ops: The checkout redesign needs the new palette, the new font, the new icons and the new layout…",
         (1,)),
        ("ops: " + texts[1], (1,)),
        # Shorter sentences fill what is left; longer ones, however good, are passed over.
        ("ops: " + " ".join(texts[1:4]), (1, 2, 3)),
    ]
    # An episode of thousands of events is summarised the same way, within the budget.
    events = [f"Order {1100 + i} shipped from the Berlin warehouse to customer account {5000 + 7 * i}."
              for i in range(3000)]
    long = extractive_summary(events, header="ops: ", max_chars=200, max_sentences=5)
    assert long.quoted == (0, 1) and long.text == "ops: " + " ".join(events[:2])


def test_open_and_recent_episodes_are_not_summarised():
    old = [record(i, f"old event number {i} about invoices", NOW - 3 * DAY + i) for i in range(4)]
    recent = [record(10 + i, f"recent event number {i} about invoices", NOW - 600 + i) for i in range(4)]
    explicit = [record(20 + i, f"explicit event {i} of the deploy", NOW - 3 * DAY + 5000 + i,
                       episode_id="ep-open") for i in range(4)]
    plan = plan_consolidation(old + recent + explicit, NOW, open_episodes={"ep-open": NOW})
    assert [s.sources for s in plan.created] == [tuple(r.id for r in old)]


def test_an_open_episode_silent_for_long_counts_as_abandoned():
    explicit = [record(i, f"explicit event {i} of the deploy", NOW - 30 * DAY + i, episode_id="ep")
                for i in range(4)]
    for last_write, summaries in ((NOW - 8 * DAY, 1), (NOW - 6 * DAY, 0)):
        plan = plan_consolidation(explicit, NOW, open_episodes={"ep": last_write})
        assert len(plan.created) == summaries


def test_important_sources_stay_active_beside_their_summary():
    records = [record(i, f"event {i} of the quarterly budget review", NOW - 3 * DAY + i,
                      importance=0.85 if i == 2 else 0.5) for i in range(5)]
    plan = plan_consolidation(records, NOW)
    assert len(plan.created) == 1
    assert "status" not in plan.updates.get("m0002", {})
    assert plan.counts["summarised"] == 4


def test_newer_fact_supersedes_older_one_and_both_are_kept():
    records = [
        record(1, "The deploy window is Friday evening.", NOW - 9 * DAY),
        record(2, "The deploy window is now Monday morning", NOW - 8 * DAY),
        record(3, "The deploy window is Monday morning.", NOW - 7 * DAY),  # same value: a duplicate
        record(4, "That is Monday morning", NOW - 6 * DAY),  # vague subject: not a fact
    ]
    plan = plan_consolidation(records, NOW, SleepPolicy(min_episode_size=10))
    assert plan.updates["m0001"]["status"] == "superseded"
    assert [(link.src, link.dst, link.kind) for link in plan.links if link.kind == "supersedes"] == [
        ("m0002", "m0001", "supersedes")]
    assert plan.counts["superseded"] == 1


def test_expiry_hides_and_decay_never_deletes():
    records = [
        record(1, "temporary door code 4411", NOW - 5 * DAY, valid_until=NOW - DAY),
        record(2, "an old unimportant remark", NOW - 300 * DAY, importance=0.1),
        record(3, "an old important rule", NOW - 300 * DAY, importance=0.6),
        record(4, "an old remark that keeps being recalled", NOW - 300 * DAY, importance=0.1,
               access_count=9, last_accessed_at=NOW - DAY, strength=0.2),
    ]
    plan = plan_consolidation(records, NOW, SleepPolicy(min_episode_size=10))
    assert plan.updates["m0001"] == {"status": "expired"}
    assert plan.updates["m0002"]["strength"] < 0.01 + 0.1 and "status" not in plan.updates["m0002"]
    assert plan.updates["m0003"]["strength"] == 0.6  # importance is a floor
    assert plan.updates["m0004"]["strength"] > 0.9  # reinforced by recall
    assert plan.counts["reinforced"] == 1


def test_recurring_knowledge_is_promoted_to_global():
    records = [
        record(1, "The staging database lives on db-stage-2 in eu-west", NOW - 5 * DAY, session="a"),
        record(2, "the staging database lives on db-stage-2 in eu-west.", NOW - 4 * DAY, session="b"),
        record(3, "Customer prefers invoices by email", NOW - 4 * DAY, session="a", importance=0.95),
    ]
    sharing = SleepPolicy(min_episode_size=10, promote_recurring=True, promote_importance=0.9)
    plan = plan_consolidation(records, NOW, sharing)
    # A new global memory of the shared text; each session's own row stays its own.
    (shared,) = plan.created
    assert (shared.kind, shared.scope, shared.content) == ("fact", "global", records[0].content)
    assert (shared.sources, shared.occurrences, shared.created_at) == (("m0001", "m0002"), 2, records[0].created_at)
    assert {link.dst for link in plan.links if link.src == shared.key} == {"m0001", "m0002"}
    assert plan.updates["m0001"] == plan.updates["m0002"] == {"status": "consolidated"}
    assert plan.updates["m0003"]["scope"] == "global"
    # By default a session's text stays its own, whoever else says the same.
    plan = plan_consolidation(records, NOW, SleepPolicy(min_episode_size=10))
    assert plan.counts["promoted"] == 0 and plan.counts["merged"] == 0


def test_sessions_share_only_exact_repeats_and_never_each_others_rows():
    records = [
        record(1, "Escalation handled by billing lead Kowalski at the Warsaw office today", NOW - 5 * DAY,
               session="a"),
        record(2, "Escalation handled by billing lead at the Warsaw office today", NOW - 4 * DAY, session="b"),
        record(3, "The VPN gateway is vpn-2", NOW - 4 * DAY, session="c", scope="global"),
        record(4, "the VPN gateway is vpn-2.", NOW - 3 * DAY, session="a"),
    ]
    plan = plan_consolidation(records, NOW, SleepPolicy(min_episode_size=10, promote_recurring=True))
    assert "status" not in plan.updates["m0001"] and "status" not in plan.updates["m0002"]  # a's words stay a's
    assert plan.updates["m0004"]["status"] == "consolidated"  # a repeat of what all can see
    assert [(link.src, link.dst) for link in plan.links] == [("m0003", "m0004")]
    assert plan.created == [] and "scope" not in plan.updates.get("m0003", {})
    # By default even that stays a's: folded into c's memory, a's copy would show c
    # what a wrote privately, and how important it was to a.
    private = plan_consolidation(records, NOW, SleepPolicy(min_episode_size=10))
    assert private.links == [] and private.counts["merged"] == 0 and private.created == []


@pytest.mark.parametrize("sharing", [False, True])
def test_a_short_repeat_folds_into_the_global_copy_in_one_sleep_if_the_policy_shares(sharing):
    # One word is too short for the word index: only its hash finds the global copy,
    # past another session's copy that may not take it. Without sharing, another
    # session's copy stays its own, however global the one it repeats.
    records = [record(0, "deploy", NOW - 5 * DAY, session="s1"),
               record(1, "deploy", NOW - 5 * DAY + 60, session="s1", scope="global"),
               record(2, "deploy", NOW - 5 * DAY + 120, session="s2")]
    policy = SleepPolicy(min_episode_size=10, promote_recurring=sharing)
    plan = plan_consolidation(records, NOW, policy)
    folded = {"m0000", "m0002"} if sharing else {"m0000"}
    assert {link.dst for link in plan.links if link.src == "m0001"} == folded
    after, links = apply(records, plan)
    assert plan_consolidation(after, NOW + 60, policy).empty


def test_a_sessions_own_copies_merge_however_many_other_sessions_hold_the_text():
    records = [record(0, "deploy", NOW - 10 * DAY, session="first"), record(1, "deploy", NOW - 9 * DAY, session="x")]
    records += [record(n, "deploy", NOW - 8 * DAY + n, session=f"other-{n}") for n in range(2, 302)]
    records.append(record(302, "deploy", NOW - 7 * DAY, session="x"))
    plan = plan_consolidation(records, NOW, SleepPolicy(min_episode_size=10))
    assert [(link.src, link.dst) for link in plan.links] == [("m0001", "m0302")]
    after, links = apply(records, plan)
    assert plan_consolidation(after, NOW + 60, SleepPolicy(min_episode_size=10)).empty


def test_a_kept_copy_takes_the_groups_it_repeats_an_anchor_of_in_the_same_sleep():
    # The global copy keeps its own time, after the shorter note: the next sleep would
    # find it repeating that note ("... fyi" says "..." again) and merge them then.
    records = [record(0, "staging database listens on port 5432 fyi", NOW - 9 * DAY, session="s"),
               record(1, "staging database listens on port 5432", NOW - 9 * DAY + 60, session="s"),
               record(2, "staging database listens on port 5432 fyi", NOW - 9 * DAY + 120, session="s",
                      scope="global")]
    plan = plan_consolidation(records, NOW, SleepPolicy(min_episode_size=10))
    assert {link.dst for link in plan.links if link.src == "m0002"} == {"m0000", "m0001"}
    after, links = apply(records, plan)
    assert plan_consolidation(after, NOW + 60, SleepPolicy(min_episode_size=10)).empty


def test_a_kept_copy_repeating_another_groups_kept_copy_takes_that_group_in_the_same_sleep():
    # Being a repeat is not transitive. The reminder joins the group of the earlier
    # reminder (a repeat of it), the "fyi" copy the plain note's; neither earlier text
    # repeats the other. The two global copies are all that is left of the groups, and
    # one repeats the other: the next sleep would merge them, so this one does.
    text = "staging database listens on port 5432"
    records = [record(0, f"reminder: {text}", NOW - 9 * DAY, session="s", importance=0.2, occurrences=2),
               record(1, text, NOW - 9 * DAY + 60, session="s", importance=0.7),
               record(2, f"{text} fyi", NOW - 9 * DAY + 120, session="s", scope="global", importance=0.3),
               record(3, f"reminder: {text} fyi", NOW - 9 * DAY + 180, session="s", scope="global",
                      importance=0.4, last_seen_at=NOW - 2 * DAY)]
    policy = SleepPolicy(min_episode_size=10)
    plan = plan_consolidation(records, NOW, policy)
    assert sorted((link.src, link.dst) for link in plan.links) == [("m0002", "m0000"), ("m0002", "m0001"),
                                                                   ("m0002", "m0003")]
    # Summed once over the whole group, as two sleeps would have summed it.
    summed = {k: plan.updates["m0002"].get(k) for k in ("occurrences", "importance", "last_seen_at", "created_at")}
    assert summed == {"occurrences": 5, "importance": 0.7, "last_seen_at": NOW - 2 * DAY, "created_at": None}
    after, links = apply(records, plan)
    assert plan_consolidation(after, NOW + 60, policy).empty


def test_global_copies_kept_by_groups_of_other_sessions_merge_with_each_other_in_the_same_sleep():
    # Sharing, each global copy of s2 folds in another session's copy of its own
    # words; and the second of them repeats the first ("... fyi." says it again).
    text = "the deploy window is not on Friday evening"
    records = [record(0, f"fyi {text}", NOW - 9 * DAY, session="s1"),
               record(1, f"Fyi {text} fyi.", NOW - 9 * DAY + 3600, session="s4"),
               record(2, f"fyi {text}", NOW - 9 * DAY + 7200, session="s2", scope="global"),
               record(3, f"Fyi {text} fyi.", NOW - 9 * DAY + 9000, session="s2", scope="global")]
    sharing = SleepPolicy(min_episode_size=10, promote_recurring=True)
    plan = plan_consolidation(records, NOW, sharing)
    assert {link.dst for link in plan.links if link.src == "m0002"} == {"m0000", "m0001", "m0003"}
    assert plan.created == [] and plan.updates["m0002"]["occurrences"] == 4
    after, links = apply(records, plan)
    assert plan_consolidation(after, NOW + 60, sharing).empty
    # Not sharing, each session keeps its own: s2's two copies merge, nothing else.
    private = plan_consolidation(records, NOW, SleepPolicy(min_episode_size=10))
    assert [(link.src, link.dst) for link in private.links] == [("m0002", "m0003")]


def test_shared_memories_of_alike_texts_stay_apart_and_a_second_plan_is_empty():
    alike = ["The staging database runs on port 5433 in eu-west",
             "The staging database runs on port 5433 in eu-west now"]
    records = [record(i, alike[i // 2], NOW - 5 * DAY + i * 60, session=f"s{i}") for i in range(4)]
    sharing = SleepPolicy(min_episode_size=10, promote_recurring=True)
    plan = plan_consolidation(records, NOW, sharing)
    assert sorted(new.content for new in plan.created) == alike  # one per text, as each pair repeats it
    after, links = apply(records, plan)
    assert plan_consolidation(after, NOW + 60, sharing).empty


def test_only_represented_sources_leave_default_recall_unless_told_all():
    texts = ["Deploy of the billing service started at noon.", "Deploy of the billing service went fine.",
             "Thanks!", "Billing service deploy finished, dashboards green.",
             "Separately, Priya's passport renewal appointment is at the consulate on Tuesday."]
    records = [record(i, t, NOW - 3 * DAY + i * 60) for i, t in enumerate(texts)]
    policy = SleepPolicy(summary_max_sentences=1, summary_max_chars=200)
    plan = plan_consolidation(records, NOW, policy)
    (summary,) = plan.created
    assert "passport" not in summary.content
    assert "status" not in plan.updates.get("m0004", {})  # its facts are not in the summary
    assert plan.updates["m0002"]["status"] == "consolidated"  # says almost nothing
    assert ("m0004" in {link.dst for link in plan.links if link.src == summary.key})  # still linked
    everything = plan_consolidation(records, NOW, dataclasses.replace(policy, consolidate="all"))
    assert all(everything.updates[r.id]["status"] == "consolidated" for r in records)


def test_a_memory_that_expires_is_left_out_of_summaries():
    texts = ["Checkout redesign review started with the whole team.", "Promo code SPRING24 works at checkout.",
             "Checkout redesign review ended with three action items.", "Checkout redesign notes were shared."]
    records = [record(i, t, NOW - 3 * DAY + i * 60, valid_until=NOW + DAY if i == 1 else None)
               for i, t in enumerate(texts)]
    plan = plan_consolidation(records, NOW, SleepPolicy(consolidate="all"))
    (summary,) = plan.created
    assert "SPRING24" not in summary.content and "m0001" not in summary.sources
    assert "status" not in plan.updates.get("m0001", {})  # stays itself, to expire on time
    assert plan.updates["m0000"]["status"] == "consolidated"


def test_a_speakers_turn_quoted_inside_a_summary_is_represented():
    summary = HEADER + "Melanie: The race was fun. Caroline: I went to the support group yesterday."
    assert represented("Caroline: I went to the support group yesterday.", summary)
    assert not represented("Caroline: I went to the support group today.", summary)


def test_words_across_two_sentences_of_a_summary_quote_nothing():
    summary = HEADER + "We decided to postpone the deploy. Failed health checks were fixed by Alice."
    assert represented("Failed health checks were fixed by Alice.", summary)
    assert not represented("Deploy failed.", summary)
    # Nor is a sentence inside a longer one: there it may be what someone claimed.
    assert not represented("Alice approved the budget",
                           HEADER + "Bob claimed that Alice approved the budget but she denied it.")
    assert not represented("sounds good", HEADER + "sounds good Deploy done.")  # a run-on of two quotes
    assert represented("sounds good", HEADER + "sounds good. Deploy done.")
    assert represented("Deploy done", HEADER + "- sounds good\n- Deploy done")  # a summariser's list
    # A line break may be wrapping.
    assert represented("Failed health checks were fixed by Alice.",
                       HEADER + "We decided to postpone the deploy. Failed health\nchecks were fixed by Alice.")


def test_each_quote_ends_its_own_sentence_in_a_summary():
    texts = ["We paused the rollout and then the deploy", "The deploy failed",
             "Failed checks were retried later by the CI runner"]
    records = [record(i, t, NOW - 3 * DAY + i * 60) for i, t in enumerate(texts)]
    plan = plan_consolidation(records, NOW, SleepPolicy(summary_max_sentences=2))
    (summary,) = plan.created
    assert summary.content.endswith("then the deploy. Failed checks were retried later by the CI runner.")
    assert "status" not in plan.updates.get("m0001", {})  # no quote across two events says it


def test_a_phrase_in_a_script_without_spaces_is_not_almost_nothing():
    assert not represented("鲍勃辞职了。", "")  # "Bob resigned.": one token, a whole sentence
    assert represented("好的", "") and represented("ok", "")  # "OK"
    assert not represented("Bob resigned.", "")


HEADER = summary_header("'ops (db): night'", 3, NOW, NOW + 600)  # a label may hold "): "


@pytest.mark.parametrize(
    ("body", "forgotten", "left"),
    [
        ("Booked the flight. ok Looking at hotels.", "ok", "Booked the flight. Looking at hotels."),
        ("Booked the flight to Tokyo. The token sheet.", "ok", None),  # inside words: untouched
        ("Wait… the password is hunter2. Deploy done.", "Wait… the password is hunter2.", "Deploy done."),
        ("Deploy done. The password for the staging database is…", "The password for the staging database "
         "is hunter2, rotated weekly.", "Deploy done."),  # cut short by the summary's budget
        ("Deploy done. The password for the staging… Restarted.", "The password for the staging database "
         "is hunter2.", "Deploy done. Restarted."),
        ("Deploy done. Pass", "Password hunter2 works", "Deploy done."),  # cut by the length limit
        ("Password hunter2 works.", "Password hunter2 works.", "(the events this summary quoted were forgotten)"),
    ],
)
def test_forgetting_takes_whole_quoted_sentences_out_of_a_summary(body: str, forgotten: str, left: str | None):
    summary = HEADER + body
    expected = summary if left is None else left if left.startswith("(") else HEADER + left
    assert without_quotes_of(summary, forgotten) == expected


@pytest.mark.parametrize(
    ("body", "forgotten", "others", "left"),
    [
        # Quotes without a final stop run together: the other sources' sentences mark where each one ends.
        ("Started the rollout Paged on-call hunter2 Rollout finished", "Paged on-call hunter2",
         ["Started the rollout", "Rollout finished"], "Started the rollout Rollout finished"),
        ("Started the rollout Paged on-call hunter2", "Paged on-call hunter2", ["Started the rollout"],
         "Started the rollout"),
        ("That is ok with me Deploy done", "ok", ["That is ok with me", "Deploy done"], None),  # inside a quote
        ("Paged on-call twice about the disk. Replaced it.", "Paged on-call",  # the start of another quote
         ["Paged on-call twice about the disk.", "Replaced it."], None),
        ("Paged on-call Paged on-call twice. Replaced it.", "Paged on-call",
         ["Paged on-call twice.", "Replaced it."], "Paged on-call twice. Replaced it."),
        # No other source tells where the quote begins: the sentence holding a word only
        # the forgotten text has goes whole.
        ("Started the rollout Paged on-call hunter2", "Paged on-call hunter2", [],
         "(the events this summary quoted were forgotten)"),
    ],
)
def test_a_quote_run_into_the_ones_before_it_is_found_by_them(
    body: str, forgotten: str, others: list[str], left: str | None
):
    summary = HEADER + body
    expected = summary if left is None else left if left.startswith("(") else HEADER + left
    assert without_quotes_of(summary, forgotten, others) == expected


@pytest.mark.parametrize(
    "summary",
    [
        "- Started the migration.\n- The temporary admin password is zebracorn42.\n- Migration done.",
        "The migration started; the admin password zebracorn42 was set for it, and it finished.",
    ],
)
def test_a_summarisers_own_wording_of_a_forgotten_text_goes_too(summary: str):
    others = ["Started the migration.", "Migration done."]
    cleaned = without_quotes_of(summary, "The temporary admin password is zebracorn42.", others)
    assert "zebracorn42" not in cleaned and "temporary" not in cleaned
