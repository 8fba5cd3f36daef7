"""One rule everywhere: session-scoped memories belong to their session; global ones to all."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from mnemosyne import InvalidInputError, MemoryNotFoundError, Mnemosyne
from mnemosyne.core.consolidation import SleepPolicy


@pytest.fixture
def agents(tmp_path: Path):
    db = tmp_path / "shared.db"
    a, b = Mnemosyne(session_id="agent-a", db_path=db), Mnemosyne(session_id="agent-b", db_path=db)
    yield a, b
    a.close()
    b.close()


@pytest.fixture
def trio(tmp_path: Path):
    """Three lexical-only agents, a, b and c, on one database, whose sleep shares what
    several sessions say alike."""
    sharing = SleepPolicy(promote_recurring=True)
    with Mnemosyne(session_id="a", db_path=tmp_path / "shared.db", embedder="none", sleep_policy=sharing) as a, \
            Mnemosyne(session_id="b", db_path=tmp_path / "shared.db", embedder="none", sleep_policy=sharing) as b, \
            Mnemosyne(session_id="c", db_path=tmp_path / "shared.db", embedder="none", sleep_policy=sharing) as c:
        yield a, b, c


def test_recall_sees_own_session_and_global(agents):
    a, b = agents
    a.remember("private plan for the migration", scope="session")
    a.remember("shared plan for the migration", scope="global")
    b.remember("b's own plan for the migration")
    assert sorted(r.content for r in a.recall("plan migration")) == [
        "private plan for the migration", "shared plan for the migration"]
    assert sorted(r.content for r in b.recall("plan migration")) == [
        "b's own plan for the migration", "shared plan for the migration"]
    assert [r.content for r in b.recall("plan migration", scope="global")] == ["shared plan for the migration"]
    assert [r.content for r in b.recall("plan migration", scope="session")] == ["b's own plan for the migration"]


def test_filters_apply_before_the_cut_even_when_other_sessions_match_better(tmp_path: Path):
    """Hundreds of another session's memories outrank the viewer's only match on
    BM25; recall still finds the viewer's match and shows nothing of the other's."""
    db = tmp_path / "crowded.db"
    a = Mnemosyne(session_id="agent-a", db_path=db, embedder="none")
    b = Mnemosyne(session_id="agent-b", db_path=db, embedder="none")
    b.remember_many([{"content": f"migration plan, migration plan, migration plan {i}"} for i in range(300)])
    mine = a.remember("the migration plan has three stages and a long review of every detail before it starts")
    found = a.recall("migration plan", top_k=5)
    assert [m.id for m in found] == [mine]
    assert len(b.recall("migration plan", top_k=5)) == 5
    a.close()
    b.close()


def test_get_update_forget_obey_the_same_rule(agents):
    a, b = agents
    private = a.remember("a's private note")
    shared = a.remember("a shared fact", scope="global")
    assert b.get(private) is None
    with pytest.raises(MemoryNotFoundError):
        b.update(private, content="tampered")
    with pytest.raises(MemoryNotFoundError):
        b.forget(private)
    assert a.get(private).content == "a's private note"

    assert b.get(shared).content == "a shared fact"
    b.update(shared, importance=0.9)
    assert a.get(shared).importance == 0.9
    b.forget(shared)
    assert a.get(shared) is None


def test_private_neighbours_never_make_a_global_memory_findable(agents):
    a, b = agents
    a.remember("codename Bluebird is the secret acquisition target", scope="session")
    a.remember("the all-hands meeting moved to Friday", scope="global")
    a.remember("Bluebird due diligence closes in March", scope="session")
    # The global memory sits between two private ones in a's episode, but its
    # context window holds only global neighbours: b's words never reach a's secrets.
    hits = b.recall("Bluebird acquisition target", explain=True)
    assert all(h.explanation["content"] == 0 and h.explanation["context"] == 0 for h in hits)
    assert [m.content for m in b.recall("all-hands meeting")] == ["the all-hands meeting moved to Friday"]


def test_by_default_sleep_keeps_a_note_two_sessions_hold_private_to_each(tmp_path: Path):
    db = tmp_path / "m.db"
    with Mnemosyne(session_id="a", db_path=db, embedder="none") as a, \
            Mnemosyne(session_id="b", db_path=db, embedder="none") as b, \
            Mnemosyne(session_id="c", db_path=db, embedder="none") as c:
        a.remember("The vault passphrase is Hinterland-42", created_at=time.time() - 10 * 86_400)
        b.remember("The vault passphrase is Hinterland-42", created_at=time.time() - 9 * 86_400)
        assert a.sleep().promoted == 0
        assert c.recall("vault passphrase") == []  # a third session never sees it
        assert [m.session_id for m in b.recall("vault passphrase")] == ["b"]


def test_by_default_sleep_never_folds_a_private_note_into_another_sessions_global_one(tmp_path: Path):
    # Folded, a's note would tell b (through a dry run's merge count, then the global
    # memory's importance) what a wrote privately, and let b edit what a recalls.
    db = tmp_path / "m.db"
    with Mnemosyne(session_id="a", db_path=db, embedder="none") as a, \
            Mnemosyne(session_id="b", db_path=db, embedder="none") as b:
        private = a.remember("The acquisition closes on March 3", importance=0.95,
                             created_at=time.time() - 10 * 86_400)
        guess = b.remember("The acquisition closes on March 3", scope="global", importance=0.1,
                           created_at=time.time() - 9 * 86_400)
        assert b.sleep(dry_run=True).merged == 0
        assert b.sleep().merged == 0
        assert b.get(guess).importance == 0.1 and a.get(private).status == "active"


def test_undoing_a_sleep_over_another_sessions_edit_names_none_of_its_memories(tmp_path: Path):
    db = tmp_path / "m.db"
    with Mnemosyne(session_id="a", db_path=db, embedder="none") as a, \
            Mnemosyne(session_id="b", db_path=db, embedder="none") as b:
        start = time.time() - 3 * 86_400
        ids = [a.remember(text, created_at=start + n * 60) for n, text in enumerate(
            ["Interviewed Alice for the CFO role", "Alice asked for a 300k salary", "The board must approve it"])]
        report = b.sleep()
        assert report.summaries == 1
        a.update(ids[1], content="Alice asked for a 320k salary")
        with pytest.raises(InvalidInputError) as refused:
            b.undo_sleep(report.id)
        assert "2 forgotten or of another session" in str(refused.value)
        assert not any(memory_id in str(refused.value) for memory_id in ids)
        with pytest.raises(InvalidInputError, match=ids[1]):  # its own are named
            a.undo_sleep(report.id)


def test_sleep_shares_a_note_two_sessions_hold_as_a_new_memory_never_as_either_ones_row(trio):
    a, b, c = trio
    mine = a.remember("Staging database password rotates every Sunday night.", source="crm",
                      metadata={"ticket": "SEC-41"})
    theirs = b.remember("staging database password rotates every sunday night")
    alike = b.remember("Customer escalation handled by billing lead at the Warsaw office today")
    detail = a.remember("Customer escalation handled by billing lead Kowalski at the Warsaw office today")

    report = c.sleep()  # any session may run sleep

    assert (report.merged, report.promoted) == (2, 1)
    (shared,) = c.recall("staging database password")
    assert (shared.scope, shared.source, shared.kind) == ("global", "sleep", "fact")
    assert shared.id not in (mine, theirs) and "ticket" not in shared.metadata
    assert shared.session_id not in ("a", "b")  # who held it stays private too
    assert a.recall("staging password")[0].id == shared.id
    assert b.get(mine) is None  # a's own row stays a's
    # Alike is not the same: a's extra word never reaches b.
    assert b.recall("Kowalski") == [] and a.get(detail).status == "active" == b.get(alike).status

    c.forget(shared.id)  # a shared memory is everyone's to forget...

    assert a.get(mine).status == "active" and b.get(theirs).status == "active"  # ...not their own copies
    assert a.get(mine).metadata == {"ticket": "SEC-41"} and c.recall("staging password") == []
    assert c.sleep().promoted == 0  # and what was forgotten is not shared again
    assert c.recall("staging password") == []


def test_a_global_memory_that_others_copies_were_folded_into_stays_forgotten(trio):
    a, b, c = trio
    text = "User prefers running tests with pytest -x -q"
    kept = a.remember(text, scope="global")
    theirs = {agent: agent.remember(text) for agent in (b, c)}
    report = a.sleep()
    assert (report.merged, report.promoted) == (2, 0)  # folded into a's global memory
    assert {agent.get(i).status for agent, i in theirs.items()} == {"consolidated"}

    a.forget(kept)

    assert {agent.get(i).status for agent, i in theirs.items()} == {"active"}  # their own again
    assert a.sleep().promoted == 0  # and what a forgot is not shared again
    assert a.recall("running tests with pytest") == []
    for agent, i in theirs.items():  # each copy stays its session's, private
        assert [m.id for m in agent.recall("running tests with pytest")] == [i]
        assert agent.get(i).scope == "session"


def test_a_global_memory_only_its_own_copies_were_folded_into_leaves_the_text_shareable(trio):
    a, b, c = trio
    text = "User prefers running tests with pytest -x -q"
    kept = a.remember(text, scope="global")
    a.remember(text, allow_duplicate=True)
    assert a.sleep().merged == 1
    a.forget(kept)  # nobody else's copy stood behind it

    for agent in (b, c):
        agent.remember(text)
    assert a.sleep().promoted == 1
    assert [m.session_id for m in b.recall("running tests with pytest")] == ["mnemosyne:shared"]


def test_a_note_that_expires_is_not_shared_beyond_its_sessions(tmp_path: Path):
    db = tmp_path / "shared.db"
    with Mnemosyne(session_id="a", db_path=db, embedder="none") as a, \
            Mnemosyne(session_id="b", db_path=db, embedder="none") as b:
        for agent in (a, b):
            agent.remember("The guest wifi password this week is tulip-42.", valid_until=time.time() + 3600)
        assert a.sleep().promoted == 0
        assert len(a.recall("guest wifi password")) == len(b.recall("guest wifi password")) == 1


def test_a_shared_memory_lasts_while_two_sessions_hold_its_text(trio):
    a, b, c = trio
    text = "The staging database password is kept in vault path ops/staging."
    copies = {agent: agent.remember(text) for agent in (a, b, c)}
    c.sleep()
    (shared,) = c.recall("staging password vault")
    assert shared.session_id == "mnemosyne:shared"

    a.forget(copies[a])
    assert c.recall("staging password vault")[0].id == shared.id  # b and c still hold it
    b.update(copies[b], content="The staging database password is kept in vault path ops/prod.")

    # Only c holds it now: it is c's own again, and no longer anyone else's to read.
    assert c.get(shared.id) is None and b.get(copies[c]) is None
    assert [m.id for m in c.recall("staging password vault")] == [copies[c]]
    assert b.recall("vault path ops/prod")[0].id == copies[b]


def test_no_agent_may_take_the_shared_memories_session(tmp_path: Path):
    with pytest.raises(InvalidInputError, match="reserved"):
        Mnemosyne(session_id="mnemosyne:shared", db_path=tmp_path / "m.db")
    assert not (tmp_path / "m.db").exists()


def test_a_shared_memory_given_new_text_holds_nobodys_note_any_more(trio):
    a, b, c = trio
    copies = [agent.remember("Bob likes green tea with breakfast.") for agent in (a, b)]
    c.sleep()
    (shared,) = c.recall("green tea")

    c.update(shared.id, content="The launch window opens on Tuesday at noon.")  # a global memory: c's to edit
    assert a.get(copies[0]).status == b.get(copies[1]).status == "active"
    a.forget(copies[0])  # a's own note: nothing to do with what c wrote

    assert c.get(shared.id).content == "The launch window opens on Tuesday at noon."


def test_forgetting_a_sessions_own_global_memory_leaves_sharing_as_it_was(trio):
    a, b, c = trio
    text = "Bob likes green tea with breakfast."
    for agent in (a, b):
        agent.remember(text)
    c.sleep()
    (shared,) = a.recall("green tea")
    own = c.remember(text, scope="global", created_at=time.time() - 3600)
    c.sleep()  # the shared memory folds into c's global one
    assert a.recall("green tea")[0].id == own

    c.forget(own)

    assert a.recall("green tea")[0].id == shared.id  # shared as before
    assert c.sleep().changed_rows == 0


def test_an_important_session_memory_stays_private_through_sleep(agents):
    alpha, beta = agents
    secret = alpha.remember("The staging database password is hunter2.", importance=0.95,
                            metadata={"secret": True})
    alpha.sleep()
    assert alpha.get(secret).scope == "session"
    assert beta.recall("staging database password") == []
