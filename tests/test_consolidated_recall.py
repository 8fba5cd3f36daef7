"""What stands for consolidated memories: recall's redirect to it, and forgetting it."""

from __future__ import annotations

import sqlite3
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from mnemosyne import Mnemosyne
from mnemosyne.core.consolidation import SleepPolicy
from mnemosyne.core.summarise import split_header
from mnemosyne.storage.base import Filters
from mnemosyne.storage.sqlite import SQLiteStore
from mnemosyne.testing import HashEmbedder

DAY = 86_400.0
OLD = time.time() - 10 * DAY

MEETING = [
    "The team discussed the new navigation bar layout for mobile screens.",
    "Alice proposed a hamburger menu with three nested levels of links.",
    "Bob objected that nested menus hurt accessibility for screen readers.",
    "They agreed to prototype a flat menu and test it with five users.",
]


@pytest.fixture
def mem(tmp_path: Path):
    with Mnemosyne(session_id="agent", db_path=tmp_path / "m.db", embedder="none") as instance:
        yield instance


def summarised_meeting(mem: Mnemosyne) -> tuple[list[str], str]:
    ids = [mem.remember(text, source="chat", created_at=OLD + i * 60) for i, text in enumerate(MEETING)]
    assert mem.sleep().summaries == 1
    (summary,) = [m for m in mem.recall("menu", include_consolidated=True) if m.kind == "summary"]
    assert {mem.get(i).status for i in ids} == {"consolidated"}
    return ids, summary.id


def test_forgetting_a_summary_makes_its_originals_findable_again(mem: Mnemosyne):
    ids, summary = summarised_meeting(mem)
    assert [m.id for m in mem.recall("hamburger menu accessibility")] == [summary]

    mem.forget(summary)

    assert {mem.get(i).status for i in ids} == {"active"}
    assert {m.id for m in mem.recall("hamburger menu accessibility")} <= set(ids)
    assert mem.recall("hamburger menu accessibility")
    # No longer summarised, so the next sleep condenses them again.
    assert mem.sleep().summaries == 1


def test_forgetting_the_kept_copy_of_duplicates_brings_back_the_other(mem: Mnemosyne):
    kept = mem.remember("The deploy key is stored in the vault under ops/deploy.", allow_duplicate=True)
    copy = mem.remember("The deploy key is stored in the vault under ops/deploy.", allow_duplicate=True)
    assert mem.sleep().merged == 1
    assert mem.get(copy).status == "consolidated"

    mem.forget(kept)

    assert mem.get(copy).status == "active"
    assert [m.id for m in mem.recall("deploy key vault")] == [copy]


BUDGET = [
    "The client budget for the website redesign is fifty thousand euros.",
    "Budget for the website redesign is fifty thousand euros.",  # said again, within the first: not quoted
    *MEETING[1:],
]


def test_forgetting_a_quoted_memory_takes_its_quote_out_and_leaves_the_others_quoted(mem: Mnemosyne):
    ids = [mem.remember(text, created_at=OLD + i * 60) for i, text in enumerate(BUDGET)]
    mem.sleep()
    (summary,) = [m for m in mem.recall("menu", include_consolidated=True) if m.kind == "summary"]
    assert BUDGET[0] in summary.content and BUDGET[1] not in summary.content
    assert mem.get(ids[1]).status == "active"  # not a sentence of its own in the summary

    mem.forget(ids[0])

    assert BUDGET[0] not in mem.get(summary.id).content
    assert mem.get(ids[1]).status == "active"
    assert mem.recall("redesign budget")[0].id == ids[1]
    assert {mem.get(i).status for i in ids[2:]} == {"consolidated"}  # still quoted


def test_a_sentence_inside_another_events_sentence_is_not_quoted_by_it(mem: Mnemosyne):
    texts = ["Bob claimed that Alice approved the budget but she denied it in the meeting",
             "Alice approved the budget", "Carol scheduled the kickoff for next sprint planning"]
    ids = [mem.remember(text, created_at=OLD + i * 60) for i, text in enumerate(texts)]
    assert mem.sleep().summaries == 1
    (episode,) = mem.episodes()
    assert episode.summary is not None and "Alice approved the budget but" in episode.summary.content
    assert mem.get(ids[1]).status == "active"
    assert ids[1] in [m.id for m in mem.recall("did Alice approve the budget")]


def test_words_across_two_events_in_a_summary_quote_no_third(mem: Mnemosyne):
    texts = ["We paused the rollout and then the deploy", "The deploy failed",
             "Failed checks were retried later by the CI runner"]
    ids = [mem.remember(text, created_at=OLD + i * 60) for i, text in enumerate(texts)]  # no final stops
    assert mem.sleep().summaries == 1
    (episode,) = mem.episodes()
    assert episode.summary is not None and "then the deploy. Failed checks" in episode.summary.content
    assert mem.get(ids[1]).status == "active"
    assert ids[1] in [m.id for m in mem.recall("did the deploy fail")]


def test_forgetting_a_quote_that_ran_into_others_takes_it_out(mem: Mnemosyne):
    texts = ["Started the v2 rollout", "Paged on-call for db latency hunter2", "Rollout finished, error rate flat"]
    ids = [mem.remember(text, created_at=OLD + i * 60) for i, text in enumerate(texts)]  # no final stops
    mem.sleep()
    (summary,) = [m for m in mem.recall("rollout", include_consolidated=True) if m.kind == "summary"]
    assert "hunter2" in summary.content

    mem.forget(ids[1])

    assert "hunter2" not in mem.get(summary.id).content and mem.recall("hunter2") == []
    assert "Started the v2 rollout" in mem.get(summary.id).content


def test_forgetting_a_short_memory_leaves_the_words_that_contain_it(mem: Mnemosyne):
    texts = ["Booked the flight to Tokyo for the offsite.", "ok",
             "Looking at hotels near the Tokyo office next week.",
             "The booking reference is TK-2231 on the token sheet."]
    ids = [mem.remember(text, created_at=OLD + i * 60) for i, text in enumerate(texts)]
    mem.sleep()
    (summary,) = [m for m in mem.recall("Tokyo", include_consolidated=True) if m.kind == "summary"]

    mem.forget(ids[1])

    header, body = split_header(mem.get(summary.id).content)
    assert body == split_header(summary.content)[1] and "(3 events," in header  # one event fewer
    assert "Booked the flight to Tokyo" in mem.recall("Tokyo flight")[0].content


def test_new_text_for_a_condensed_memory_is_found_by_its_words(mem: Mnemosyne):
    ids, summary = summarised_meeting(mem)

    mem.update(ids[2], content="Bob now backs the hamburger menu after the usability test.")

    assert mem.get(ids[2]).status == "active"
    assert MEETING[2] not in mem.get(summary).content  # the old text is not quoted any more
    assert mem.recall("Bob backs the usability test")[0].id == ids[2]


def test_new_text_for_a_kept_copy_brings_back_the_copies_it_stood_for(mem: Mnemosyne):
    kept = mem.remember("The deploy key is stored in the vault under ops/deploy.", allow_duplicate=True)
    copy = mem.remember("The deploy key is stored in the vault under ops/deploy.", allow_duplicate=True)
    assert mem.sleep().merged == 1

    mem.update(kept, content="Lunch is at noon on Fridays.")

    assert mem.get(copy).status == "active"
    assert mem.recall("deploy key vault")[0].id == copy


def test_resaving_the_same_text_changes_nothing_that_stands_for_it(mem: Mnemosyne):
    ids, summary = summarised_meeting(mem)
    before = mem.get(summary).content

    mem.update(ids[1], content=MEETING[1], importance=0.6)

    assert mem.get(summary).content == before and mem.get(ids[1]).status == "consolidated"


def test_a_kept_copy_given_another_value_brings_back_its_copies(mem: Mnemosyne):
    kept = mem.remember("The replica database listens on port 5433.", allow_duplicate=True)
    copy = mem.remember("The replica database listens on port 5433.", allow_duplicate=True)
    assert mem.sleep().merged == 1

    mem.update(kept, content="The replica database listens on port 6000.")  # one number: not the same

    assert mem.get(copy).status == "active"


def test_a_summary_made_to_stand_for_all_keeps_standing_for_all(mem: Mnemosyne):
    ids = [mem.remember(text, created_at=OLD + i * 60) for i, text in enumerate(BUDGET)]
    mem.sleep(policy=SleepPolicy(consolidate="all"))
    assert {mem.get(i).status for i in ids} == {"consolidated"}

    mem.forget(ids[0])

    assert {mem.get(i).status for i in ids[1:]} == {"consolidated"}  # as that sleep decided


def test_new_metadata_for_a_summary_keeps_the_rule_it_was_made_by(mem: Mnemosyne):
    ids = [mem.remember(text, created_at=OLD + i * 60) for i, text in enumerate(BUDGET)]
    mem.sleep(policy=SleepPolicy(consolidate="all"))
    (summary,) = [m for m in mem.recall("budget", include_consolidated=True) if m.kind == "summary"]

    updated = mem.update(summary.id, metadata={"reviewed": True})
    mem.forget(ids[0])

    assert updated.metadata == {"reviewed": True, "rule": summary.metadata["rule"]}
    assert {mem.get(i).status for i in ids[1:]} == {"consolidated"}  # still judged by "all"


def test_only_what_still_stands_for_a_memory_keeps_it_out_of_recall(mem: Mnemosyne):
    ids = [mem.remember(text, created_at=OLD + i * 60) for i, text in enumerate(BUDGET)]
    mem.sleep(policy=SleepPolicy(summary_max_sentences=1))
    left_out = [i for i in ids if mem.get(i).status == "active"]  # the summary does not say it...
    assert left_out
    kept = mem.remember(mem.get(left_out[0]).content, allow_duplicate=True, created_at=OLD - 60)
    mem.sleep()  # ...and an earlier copy of it now stands for it
    assert mem.get(left_out[0]).status == "consolidated"

    mem.forget(kept)

    # Still linked from the summary, which does not say it: it is back in recall.
    assert mem.get(left_out[0]).status == "active"


def test_forgetting_a_correction_leaves_the_old_value_superseded(mem: Mnemosyne):
    old = mem.remember("The staging port is 8080.", created_at=OLD)
    new = mem.remember("The staging port is 8443.", created_at=OLD + DAY)
    assert mem.sleep().superseded == 1

    mem.forget(new)

    assert mem.get(old).status == "superseded"
    assert mem.recall("staging port") == []


def test_asked_for_old_values_too_recall_ranks_the_current_one_first(mem: Mnemosyne):
    # The old value is the more important, and the more used: it still ranks second.
    old = mem.remember("The deploy day is Tuesday.", created_at=OLD, importance=0.9)
    for _ in range(3):
        mem.recall("deploy day Tuesday")
    new = mem.remember("The deploy day is Friday.", created_at=OLD + DAY, importance=0.5)
    assert mem.sleep().superseded == 1
    found = mem.recall("which day is the deploy day", include_consolidated=True, explain=True)
    assert [m.id for m in found] == [new, old]
    assert (found[0].explanation["superseded"], found[1].explanation["superseded"]) == (1.0, 0.75)


def test_a_correction_edited_to_another_subject_makes_the_old_value_current_again(mem: Mnemosyne):
    old = mem.remember("The primary on-call engineer is Dana.", created_at=OLD)
    new = mem.remember("The primary on-call engineer is Eve.", created_at=OLD + DAY)
    assert mem.sleep().superseded == 1
    mem.update(new, content="The backup on-call engineer is Eve.")
    assert mem.get(old).status == "active"
    assert mem.recall("primary on-call engineer", top_k=1)[0].id == old
    mem.update(new, content="The primary on-call engineer is Eve.")  # a newer value again: the next sleep says so
    assert mem.sleep().superseded == 1 and mem.get(old).status == "superseded"


@pytest.mark.parametrize(("older", "newer", "reworded"), [
    ("The meeting is at 3pm.", "The meeting is at 4pm.", "The meeting is at 4 pm."),
    ("The price is $40.", "The price is $45.", "The price is 45 dollars."),
    ("The sprint length is two weeks.", "The sprint length is three weeks.", "The sprint length is 3 weeks."),
])
def test_a_correction_reworded_for_the_same_subject_keeps_the_old_value_replaced(
    mem: Mnemosyne, older: str, newer: str, reworded: str
):
    old = mem.remember(older, created_at=OLD)
    new = mem.remember(newer, created_at=OLD + DAY)
    assert mem.sleep().superseded == 1
    mem.update(new, content=reworded)
    assert mem.get(old).status == "superseded"


def test_a_superseded_value_edited_to_another_subject_is_current_and_its_own_old_value_stays_replaced(
    mem: Mnemosyne,
):
    dana, eve, frank = (mem.remember(f"The on-call engineer is {name}.", created_at=OLD + i * DAY)
                        for i, name in enumerate(["Dana", "Eve", "Frank"]))
    assert mem.sleep().superseded == 2
    mem.update(eve, content="The backup on-call engineer is Eve.")
    assert (mem.get(dana).status, mem.get(eve).status, mem.get(frank).status) == ("superseded", "active", "active")
    assert mem.recall("backup on-call engineer", top_k=1)[0].id == eve
    assert mem.sleep().superseded == 0  # Frank still the newer value of Dana's subject; Eve's is another
    assert (mem.get(dana).status, mem.get(eve).status, mem.get(frank).status) == ("superseded", "active", "active")


def test_a_representative_failing_the_filters_gives_way_to_the_original(mem: Mnemosyne):
    ids, summary = summarised_meeting(mem)

    # The summary's source is "sleep" and it is dated at the meeting's start.
    by_source = mem.recall("hamburger menu accessibility", source="chat")
    assert summary not in {m.id for m in by_source}
    assert {m.id for m in by_source} <= set(ids) and by_source

    later = mem.recall("flat menu prototype", since=OLD + 150)
    assert [m.id for m in later] == [ids[3]]


def test_rows_read_after_search_are_filtered_again(tmp_path: Path):
    # Recall searches and then reads rows by seq; a seq that another session's memory
    # took in between must not be returned to a viewer who may not see it.
    private = Mnemosyne(session_id="bob", db_path=tmp_path / "m.db", embedder="none")
    secret = private.remember("Bob's salary is confidential.")
    private.close()
    store = SQLiteStore(tmp_path / "m.db")
    with sqlite3.connect(tmp_path / "m.db") as conn:
        (seq,) = conn.execute("SELECT seq FROM memories WHERE id = ?", (secret,)).fetchone()

    assert store.memories_by_seq([seq], Filters(viewer_session="agent")) == {}
    assert list(store.memories_by_seq([seq], Filters(viewer_session="bob"))) == [seq]
    store.close()


@pytest.mark.parametrize("embedder", ["none", HashEmbedder()], ids=["lexical", "with vectors"])
def test_matches_a_summary_condensed_do_not_crowd_out_active_ones(tmp_path: Path, embedder):
    with Mnemosyne(session_id="agent", db_path=tmp_path / "m.db", embedder=embedder) as mem:
        # Short events rank above long memories; sleep condenses all fifty into one summary.
        tags = [chr(97 + i // 26) + chr(97 + i % 26) for i in range(50)]
        mem.remember_many([{"content": f"apples batch {t}", "created_at": OLD + i * 60} for i, t in enumerate(tags)])
        assert mem.sleep(policy=SleepPolicy(consolidate="all")).summarised == 50
        lists = [mem.remember(f"grocery list {i}: bread, milk, eggs, cheese, butter, apples, rice, pasta")
                 for i in range(3)]
        found = mem.recall("apples", top_k=10)
        assert len(found) == 4
        assert set(lists) <= {m.id for m in found}


CITIES = """Paris Lyon Madrid Porto Vienna Prague Warsaw Krakow Dublin Cork Oslo Bergen Turin Milan Genoa
    Seville Valencia Ghent Bruges Aarhus Odense Tallinn Riga Vilnius Sofia Zagreb Split Bern Basel Geneva""".split()


def test_a_detail_the_summary_leaves_out_is_answered_by_the_original(mem: Mnemosyne):
    ids = [mem.remember(f"The shipment for {city} left the Berlin warehouse on schedule", created_at=OLD + i * 60)
           for i, city in enumerate(CITIES)]
    assert mem.sleep(policy=SleepPolicy(consolidate="all")).summaries == 1  # it stands for all
    assert mem.get(ids[17]).status == "consolidated"  # the summary quotes a few shipments, not this one
    assert mem.recall(f"shipment {CITIES[17]}", top_k=5)[0].id == ids[17]
    # A query the summary answers still gets the summary.
    assert mem.recall("Berlin warehouse shipment", top_k=1)[0].kind == "summary"


def test_a_number_the_summary_leaves_out_keeps_its_memory_in_view(mem: Mnemosyne):
    ids = [mem.remember(f"Order {1100 + i} shipped from the Berlin warehouse to customer account {5000 + 7 * i}",
                        created_at=OLD + i * 60) for i in range(30)]
    assert mem.sleep().summaries == 1
    (episode,) = mem.episodes()
    summary = episode.summary
    assert summary is not None
    for i, memory_id in enumerate(ids):  # a summary stands only for orders it names
        assert (mem.get(memory_id).status == "consolidated") == (str(1100 + i) in summary.content)
    assert mem.get(ids[17]).status == "active"
    assert mem.recall("order 1117", top_k=5)[0].id == ids[17]


def test_a_word_the_kept_copy_lacks_is_answered_by_the_merged_copy(mem: Mnemosyne):
    kept = mem.remember("Alice approved the budget for the new office in Lisbon", created_at=OLD)
    again = mem.remember("Confirmed again: Alice approved the budget for the new office in Lisbon",
                         created_at=OLD + 60)
    assert mem.sleep(policy=SleepPolicy(min_episode_size=10)).merged == 1
    assert mem.get(again).status == "consolidated"
    assert mem.recall("confirmed budget", top_k=1)[0].id == again
    assert [m.id for m in mem.recall("budget office Lisbon")] == [kept]  # the copy still stands for it


def test_the_words_a_kept_copy_lacks_are_compared_as_the_index_matches_them(mem: Mnemosyne):
    """By stem: "confirm" finds "confirmed" (accents: see test_lexical)."""
    kept = mem.remember("Alice approved the budget for the new office in Lisbon", created_at=OLD)
    again = mem.remember("Confirmed: Alice approved the budget for the new office in Lisbon",
                         created_at=OLD + 60)
    assert mem.sleep(policy=SleepPolicy(min_episode_size=10)).merged == 1
    for query in ("confirm the budget", "confirming budget", "confirmed budget"):
        assert mem.recall(query, top_k=1)[0].id == again, query
    assert [m.id for m in mem.recall("budget office Lisbon")] == [kept]


def test_a_repeat_merged_into_a_copy_its_summary_left_active_is_answered_by_that_copy(mem: Mnemosyne):
    """Up the repeat's chain the summary is newest, but lacks the query's words: the
    copy that holds them stands for the repeat, which is not returned beside it."""
    day = ["Deploy of the refunds service started", "Opened src/ledger/fees.py to read the docstring",
           "Refunds service deploy finished, refunds healthy"]
    ids = [mem.remember(text, importance=0.2, created_at=OLD + i * 60) for i, text in enumerate(day)]
    # A gist that quotes nothing: every event stays active, linked to the summary.
    assert mem.sleep(summariser=lambda texts: "The refunds service was deployed without trouble.").summaries == 1
    assert mem.get(ids[1]).status == "active"
    repeat = mem.remember(day[1], importance=0.2, created_at=OLD + 2 * DAY)
    assert mem.sleep().merged == 1
    assert mem.get(repeat).status == "consolidated"

    found = mem.recall("fees.py docstring", top_k=3)

    assert found[0].id == ids[1]
    assert {m.status for m in found} == {"active"}
    assert repeat not in {m.id for m in found}


def test_a_shared_copy_edited_into_a_symbol_variant_gives_each_session_its_own_back(tmp_path: Path):
    db = tmp_path / "m.db"
    with Mnemosyne(session_id="s1", db_path=db, embedder="none") as a, \
            Mnemosyne(session_id="s2", db_path=db, embedder="none") as b:
        mine = a.remember("We build the release CLI with C# tooling", created_at=OLD)
        b.remember("We build the release CLI with C# tooling", created_at=OLD + 5)
        assert a.sleep(policy=SleepPolicy(promote_recurring=True)).promoted == 1
        shared = next(m for m in a.recall("release CLI tooling") if m.session_id == "mnemosyne:shared")
        a.update(shared.id, content="We build the release CLI with C++ tooling")
        assert a.get(mine).status == "active"


ACME = ["Kickoff meeting with the Acme client about the billing migration",
        "The Acme admin password is Zebra7781Quartz and must stay secret",
        "Bob will own the database cutover for Acme"]


@pytest.mark.parametrize("summariser", [None, lambda texts: "Acme kickoff; admin password Zebra7781Quartz; "
                                                            "Bob owns the cutover."])
def test_a_summary_says_what_it_still_covers_once_an_event_is_forgotten(mem: Mnemosyne, summariser):
    ids = [mem.remember(text, created_at=OLD + i * 60) for i, text in enumerate(ACME)]
    mem.sleep(summariser=summariser)
    (episode,) = mem.episodes()
    assert episode.summary is not None and "(3 events," in episode.summary.content

    mem.forget(ids[1])

    (episode,) = mem.episodes()
    summary = episode.summary
    assert summary is not None and episode.size == 2 and summary.metadata["sources"] == 2
    started = time.strftime("%Y-%m-%d %H:%M", time.gmtime(OLD))
    assert summary.content.startswith(f"Summary of episode (2 events, {started} to ")
    assert "Zebra7781Quartz" not in summary.content and "password" not in summary.content
    # A summariser's gist held the forgotten event's words throughout: the events left are quoted afresh.
    assert ACME[0] in summary.content and ACME[2] in summary.content
    assert mem.recall("Zebra7781Quartz", include_consolidated=True) == []

    mem.forget(ids[0])
    mem.forget(ids[2])
    assert mem.get(summary.id).content == "(the events this summary quoted were forgotten)"


@pytest.mark.parametrize("change", ["forget", "update"])
def test_a_quote_given_its_own_full_stop_goes_with_the_event(mem: Mnemosyne, change: str):
    # A summary ends each quote with a full stop; the event's own text has none. Every
    # word of it is said elsewhere in the episode, so only the quote itself can tell.
    texts = ["The deploy of billing failed on staging", "Alice approved the billing deploy budget",
             "Alice and the billing team will redo the deploy on staging",
             "The budget for the billing deploy is approved"]
    ids = [mem.remember(text, created_at=OLD + i * 60) for i, text in enumerate(texts)]
    mem.sleep()
    (episode,) = mem.episodes()
    assert episode.summary is not None and "Alice approved the billing deploy budget." in episode.summary.content
    if change == "forget":
        mem.forget(ids[1])
    else:
        mem.update(ids[1], content="Alice rejected the billing deploy budget")
    (episode,) = mem.episodes()
    assert episode.summary is not None and "Alice approved" not in episode.summary.content
    assert "The deploy of billing failed on staging." in episode.summary.content


NIGHTLY = "Nightly build failed: mypy error in src/payments/ledger.py:88."


def test_a_repeat_merged_into_an_older_copy_still_answers_for_its_own_day(tmp_path: Path):
    now = datetime(2026, 6, 10, 17, tzinfo=timezone.utc)
    yesterday = datetime(2026, 6, 9, tzinfo=timezone.utc)
    db = tmp_path / "m.db"
    with Mnemosyne(session_id="agent", db_path=db, embedder="none") as mem, \
            Mnemosyne(session_id="bob", db_path=db, embedder="none") as bob:
        first = mem.remember(NIGHTLY, source="ci-bot", created_at=now - timedelta(days=21))
        mem.remember("Ran the migration 0042 on staging.", source="assistant", created_at=now - timedelta(days=20))
        repeat = mem.remember(NIGHTLY, source="ci-bot", created_at=yesterday + timedelta(hours=2))
        refund = mem.remember("User asked to bump the refund limit to 10000 EUR.", source="user",
                              created_at=yesterday + timedelta(hours=10))
        # Another session's private copies, merged in their own session.
        bob.remember_many({"content": NIGHTLY, "source": "ci-bot", "created_at": at}
                          for at in (now - timedelta(days=21), yesterday + timedelta(hours=3)))
        assert mem.sleep().merged == 2
        assert mem.get(repeat).status == "consolidated"

        # Listed, searched for or filtered by its day, the repeat is what happened
        # then, as it did before sleep; the copy kept from three weeks before is not.
        assert [m.id for m in mem.recall("what happened yesterday", now=now)] == [refund, repeat]
        # Of yesterday, the repeat answers for the kept copy of the same words too.
        asked = [m.id for m in mem.recall("did the nightly build fail yesterday", now=now)]
        assert asked[0] == repeat and first not in asked
        assert [m.id for m in mem.recall("nightly build failed", since=yesterday, until=now)] == [repeat]
        assert [m.id for m in mem.recall("what did ci-bot say yesterday", now=now)] == [repeat]
        # Asked without a time, the kept copy stands for it.
        assert [m.id for m in mem.recall("nightly build failed", now=now)] == [first]

        mem.forget(repeat)
        assert [m.id for m in mem.recall("what happened yesterday", now=now)] == [refund]
        assert mem.recall("nightly build failed", since=yesterday, until=now) == []


def test_the_repeats_of_one_day_merged_into_an_older_copy_answer_once_for_it(tmp_path: Path):
    now = datetime(2026, 6, 10, 17, tzinfo=timezone.utc)
    yesterday = datetime(2026, 6, 9, tzinfo=timezone.utc)
    with Mnemosyne(session_id="agent", db_path=tmp_path / "m.db", embedder="none") as mem:
        mem.remember(NIGHTLY, created_at=now - timedelta(days=21))
        night, noon = (mem.remember(NIGHTLY, created_at=yesterday + timedelta(hours=hour)) for hour in (2, 12))
        lunch = mem.remember("Lunch with the payments team.", created_at=yesterday + timedelta(hours=13))
        assert mem.sleep().merged == 2
        # Sleep made the two one memory said again; yesterday's first answers for both.
        assert [m.id for m in mem.recall("what happened yesterday", now=now)] == [lunch, night]
        for found in (mem.recall("nightly build failed", since=yesterday, until=now),
                      mem.recall("did the nightly build fail yesterday", now=now)):
            assert found[0].id == night
            assert noon not in {m.id for m in found}


def test_a_repeat_merged_into_a_copy_of_the_same_day_is_listed_once(tmp_path: Path):
    now = datetime(2026, 6, 10, 17, tzinfo=timezone.utc)
    with Mnemosyne(session_id="agent", db_path=tmp_path / "m.db", embedder="none") as mem:
        first = mem.remember(NIGHTLY, created_at=datetime(2026, 6, 9, 2, tzinfo=timezone.utc))
        mem.remember(NIGHTLY, created_at=datetime(2026, 6, 9, 14, tzinfo=timezone.utc))
        assert mem.sleep().merged == 1
        assert [m.id for m in mem.recall("what happened yesterday", now=now)] == [first]


def test_a_summary_answers_for_the_day_it_is_of_and_its_events_of_another_day_for_theirs(tmp_path: Path):
    now = datetime(2026, 6, 10, 17, tzinfo=timezone.utc)

    def on(day: int, hour: int, minute: int) -> datetime:
        return datetime(2026, 6, day, hour, minute, tzinfo=timezone.utc)

    with Mnemosyne(session_id="agent", db_path=tmp_path / "m.db", embedder="none") as mem:
        # One episode from the evening before yesterday into yesterday's first hour,
        # one of yesterday afternoon.
        drill = mem.remember_many([
            {"content": "Started the database failover drill.", "created_at": on(8, 23, 40)},
            {"content": "Promoted the replica in eu-west.", "created_at": on(8, 23, 55)},
            {"content": "Failover drill finished after 4 minutes of read-only.", "created_at": on(9, 0, 10)},
            {"content": "Wrote the drill report for the SRE channel.", "created_at": on(9, 0, 20)},
        ])
        review = mem.remember_many([
            {"content": "Reviewed PR #512 for the billing export.", "created_at": on(9, 14, 0)},
            {"content": "Left two comments on the CSV encoding.", "created_at": on(9, 14, 10)},
            {"content": "Approved PR #512 after the fix.", "created_at": on(9, 14, 30)},
        ])
        assert mem.sleep(policy=SleepPolicy(summarise_after=0, consolidate="all")).summaries == 2
        summaries = {m.created_at.day: m.id for m in mem.recall("drill PR", include_consolidated=True, top_k=20)
                     if m.kind == "summary"}

        # The afternoon's summary (made yesterday) stands for its events; the drill's
        # is dated the evening before, and its events of yesterday answer themselves.
        yesterday = {m.id for m in mem.recall("what happened yesterday", now=now)}
        assert yesterday == {summaries[9], *drill[2:]}
        assert not yesterday & {*review, *drill[:2]}
        assert {m.id for m in mem.recall("what happened 2 days ago", now=now)} == {summaries[8]}
