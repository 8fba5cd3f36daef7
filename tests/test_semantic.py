"""Semantic and hybrid recall: embedders recorded with the data, backfill, reembed, fusion."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest

from mnemosyne import EmbedderError, EmbedderInputError, EmbedderMismatchError, InvalidInputError, Mnemosyne
from mnemosyne.testing import FailingEmbedder, HashEmbedder

NOW = datetime(2026, 6, 15, 12, tzinfo=timezone.utc)


def local_model_or_skip():
    pytest.importorskip("onnxruntime", reason="the 'local' extra (onnxruntime) is not installed")
    pytest.importorskip("tokenizers", reason="the 'local' extra (tokenizers) is not installed")
    return "local"


def test_paraphrase_with_no_shared_words_is_found(tmp_path: Path):
    with Mnemosyne(session_id="crm", db_path=tmp_path / "m.db", embedder=local_model_or_skip()) as mem:
        font = mem.remember("the font is Inter")
        mem.remember("Invoices go out on the first Monday of each month")
        mem.remember("The staging server was rebooted after the outage")
        mem.remember("Lunch order: two pizzas and a salad")
        found = mem.recall("what typeface does the customer use", top_k=1)
        assert [m.id for m in found] == [font]
        assert mem.get_stats().embedder.startswith("local:all-MiniLM-L6-v2")


def test_an_answer_in_other_words_is_found_though_not_close(tmp_path: Path):
    with Mnemosyne(db_path=tmp_path / "m.db", embedder=local_model_or_skip()) as mem:
        school = mem.remember("My son starts kindergarten in September.")  # cosine 0.27 to the question
        mem.remember("Invoices go out on the first Monday of each month")
        mem.remember("The deploy checklist has seven steps")
        assert [m.id for m in mem.recall("kids")] == [school]


def test_what_a_long_note_says_past_the_models_window_is_found_by_meaning(tmp_path: Path):
    budget = ("Weekly sync, platform team. First the quarterly budget: cloud spend rose eleven percent, mostly "
              "from the analytics cluster, and finance wants a forecast by Friday. We agreed to tag every resource "
              "with its owner and to review idle volumes each month. ") * 3
    hiring = ("Then hiring: two backend roles are open, the interview loop gets a system design round, and "
              "referrals earn a bonus after ninety days. Candidates should hear back within a week. ") * 3
    office = ("Last item: the office move. From March the team sits on the fourth floor of the new building near "
              "the river, desks are unassigned, and parking passes must be renewed at reception. ") * 3
    with Mnemosyne(db_path=tmp_path / "m.db", embedder=local_model_or_skip()) as mem:
        note = mem.remember(budget + hiring + office, source="meeting-notes")  # the office move from token 256 on
        mem.remember_many(["Alice prefers morning meetings.", "The mobile app targets iOS 17 and Android 14.",
                           "Retro is every second Thursday.", "Grafana dashboards live in the ops folder."])
        found = mem.recall("where will our workplace be after the relocation?", top_k=3)
        assert [m.id for m in found][:1] == [note]


def test_meaning_alone_must_be_close_to_make_a_result(tmp_path: Path):
    with Mnemosyne(db_path=tmp_path / "m.db", embedder=local_model_or_skip()) as mem:
        mem.remember("The deploy checklist has seven steps")
        assert mem.recall("favourite ice cream flavour") == []


UNRELATED_FACTS = ["The customer is based in Lisbon, Portugal.", "Dana cannot eat peanuts.",
                   "CI pipeline is green on main.", "Her dog Max is a golden retriever."]


def test_a_memory_found_by_unrelated_neighbours_words_alone_is_no_result(tmp_path: Path):
    # Stored together, the facts are one episode: each one's window holds the others'
    # words, and "customer" matched every window. Only the fact holding it is meant.
    with Mnemosyne(db_path=tmp_path / "m.db", embedder=local_model_or_skip()) as mem:
        mem.remember_many({"content": fact} for fact in UNRELATED_FACTS)
        found = [m.content for m in mem.recall("which browser does the customer use")]
        assert found == [UNRELATED_FACTS[0]]


def test_a_memory_unlike_its_neighbours_is_not_found_by_their_words(tmp_path: Path):
    # The font's window is close to the question by the font itself; only the
    # facts holding a word of the question, or meaning it, are results. The
    # MacBook and the dog, found by their neighbours' "customer" and near the
    # font, mean nothing like their neighbours (cosine 0.0-0.1).
    facts = ["The customer is based in Lisbon, Portugal.", "I paid 1200 dollars for the new MacBook.",
             "The font is Inter.", "Her dog Max is a golden retriever."]
    with Mnemosyne(db_path=tmp_path / "m.db", embedder=local_model_or_skip()) as mem:
        mem.remember_many({"content": fact} for fact in facts)
        found = {m.content for m in mem.recall("what typeface does the customer use")}
        assert found == {facts[0], facts[2]}


def test_without_vectors_the_neighbours_words_still_find_a_memory(tmp_path: Path):
    with Mnemosyne(db_path=tmp_path / "m.db", embedder="none") as mem:
        mem.remember_many({"content": fact} for fact in UNRELATED_FACTS)
        found = {m.content for m in mem.recall("which browser does the customer use")}
        assert found == set(UNRELATED_FACTS[:3])  # within two events of the one holding "customer"


def test_a_reply_is_found_by_the_question_beside_it(tmp_path: Path):
    # The reply alone scores a cosine of 0.14 to the query, and with its question 0.61.
    with Mnemosyne(db_path=tmp_path / "m.db", embedder=local_model_or_skip()) as mem:
        start = NOW - timedelta(days=3)
        mem.remember("user: How long did the concert on Saturday last?", source="user", created_at=start)
        reply = mem.remember("assistant: Until almost midnight, we left exhausted.", source="assistant",
                             created_at=start + timedelta(seconds=30))
        mem.remember("user: Remind me to water the plants.", source="user", created_at=NOW - timedelta(days=1))
        assert reply in [m.id for m in mem.recall("how long was the concert", now=NOW)]


def test_a_question_about_the_user_finds_what_the_user_said_of_themselves(tmp_path: Path):
    # "what job does the user have" scores 0.29 to the nurse, hardly above the rest;
    # asked as the user would ("what job do I have"), 0.49.
    facts = ["I work as a nurse at the city hospital.", "I spend weekends painting watercolours.",
             "I turned 32 last month.", "The standup is off tomorrow.", "Everything runs on AWS in eu-west-1.",
             "Her dog Max is a golden retriever.", "The report is due Friday at 5pm.", "He writes everything in Rust.",
             "Bob prefers calls on Tuesday mornings.", "I sprained my ankle while jogging."]
    with Mnemosyne(db_path=tmp_path / "m.db", embedder=local_model_or_skip()) as mem:
        mem.remember_many(facts)
        for query in ("what job does the user have", "what is the user's job"):
            assert [m.content for m in mem.recall(query)] == [facts[0]], query


CHAT = [
    {"content": "I need new running shoes for the marathon in May.", "source": "user"},
    {"content": "Good running shoes matter! Buy running shoes that fit well, and try Brooks or Asics running "
                "shoes in the store.", "source": "assistant"},
    {"content": "Thanks. I bought the Brooks Ghost yesterday.", "source": "user"},
]


@pytest.mark.parametrize(("query", "first", "lowered"), [
    # Asked of what the user did: the assistant's advice echoes the question's words.
    ("which running shoes did I buy", "user", "assistant"),
    # Asked of what the assistant said: its turn leads, nothing lowered.
    ("which running shoes did you tell me to buy", "assistant", None),
])
def test_a_question_in_one_sides_words_lowers_the_other_sides_turns(
        tmp_path: Path, query: str, first: str, lowered: str | None):
    with Mnemosyne(session_id="chat", db_path=tmp_path / "m.db", embedder=local_model_or_skip()) as mem:
        mem.remember_many(CHAT)
        found = mem.recall(query, explain=True)
        assert found[0].source == first
        assert {m.source for m in found if m.explanation["other_role"] < 1} == ({lowered} if lowered else set())
        if lowered:
            assert found[-1].source == lowered


def test_the_first_write_records_the_embedder_and_another_one_is_refused(tmp_path: Path):
    db = tmp_path / "m.db"
    with Mnemosyne(db_path=db, embedder=HashEmbedder(64)) as mem:
        # Until then the database is bound to no model, and stats says so.
        assert mem.get_stats().embedder == "test-hash:hash-v1-64 (64 dims), none recorded yet"
        mem.remember("recorded with the hash embedder")
        assert mem.get_stats().embedder == "test-hash:hash-v1-64 (64 dims)"
    # An object the CLI cannot build is switched from Python.
    with pytest.raises(EmbedderMismatchError, match=r"reembed\(your_embedder\)"):
        Mnemosyne(db_path=db, embedder=HashEmbedder(32))
    # Even one that calls itself "local": the CLI would build the bundled model instead.
    named_local = HashEmbedder(32)
    named_local.name = "local"
    with pytest.raises(EmbedderMismatchError, match=r"reembed\(your_embedder\)"):
        Mnemosyne(db_path=db, embedder=named_local)
    with Mnemosyne(db_path=db, embedder=HashEmbedder(64)) as mem:  # the same one is fine
        assert mem.recall("recorded hash")[0].content == "recorded with the hash embedder"
    # "none" means "do not embed here", not another model: the record stays.
    with Mnemosyne(db_path=db, embedder="none") as mem:
        mem.remember("written without vectors")
        assert mem.get_stats().embedder == "test-hash:hash-v1-64 (64 dims), switched off here (embedder 'none')"
    # Left to choose, a process cannot build a custom embedder object by itself.
    with Mnemosyne(db_path=db) as mem:
        assert mem.get_stats().embedder == "test-hash:hash-v1-64 (64 dims), unavailable here"


def test_unknown_embedder_spec_is_bad_input(tmp_path: Path):
    with pytest.raises(InvalidInputError, match="unknown embedder"):
        Mnemosyne(db_path=tmp_path / "m.db", embedder="word2vec")
    with pytest.raises(InvalidInputError, match="takes no model name"):  # not the bundled model
        Mnemosyne(db_path=tmp_path / "m.db", embedder="local:all-mpnet-base-v2")
    assert not (tmp_path / "m.db").exists()


def test_a_bad_setting_is_refused_even_for_the_recorded_embedder(tmp_path: Path):
    local_model_or_skip()
    db = str(tmp_path / "m.db")
    with Mnemosyne(db_path=db, embedder="local") as mem:
        mem.remember("the cat sat on the mat")
    error = run_cli("remember", "a kitten on the carpet", "--db", db, "--json", env={"MNEMOSYNE_THREADS": "four"},
                    code=2, stream="stderr")
    assert "MNEMOSYNE_THREADS" in error
    with Mnemosyne(db_path=db) as mem:
        assert mem.get_stats().total == 1


class ResizingEmbedder(HashEmbedder):
    """A service that tells its size only by answering, and may be redeployed."""

    def __init__(self, dimension: int) -> None:
        super().__init__(dimension)
        self.model = "resizing-v1"
        self.serving = dimension
        self.dimension = None  # type: ignore[assignment]

    def embed(self, texts):
        return HashEmbedder(self.serving).embed(texts)


def test_the_first_answer_fixes_an_unknown_dimension(tmp_path: Path):
    db = tmp_path / "m.db"
    service = ResizingEmbedder(8)
    with Mnemosyne(db_path=db, embedder=service) as mem:
        mem.remember("the cat sat on the mat")
        assert mem.get_stats().embedder == "test-hash:resizing-v1 (8 dims)"
        service.serving = 16  # redeployed with a bigger model: a failure, not a mix
        mem.remember("a second memory")
        assert vectors_in(db, dimension=8) == 1 and vectors_in(db) == 1
    with Mnemosyne(db_path=db, embedder=ResizingEmbedder(16)) as mem:
        assert len(mem.recall("memory cat")) == 2  # found, by words, without a mix of sizes


class UnscaledEmbedder(HashEmbedder):
    """Breaks the contract: rows of any length, and zero rows for texts without words."""

    def embed(self, texts):
        return super().embed(texts) * 1e20


def test_vectors_are_scaled_to_unit_length_and_zero_rows_are_no_vectors(tmp_path: Path):
    db = tmp_path / "m.db"
    with Mnemosyne(db_path=db, embedder=UnscaledEmbedder(32)) as mem:
        words, none = mem.remember_many(["the cat sat on the mat", "!!! ???"])
        with sqlite3.connect(db) as conn:
            stored = conn.execute("SELECT m.id, v.vector FROM memories m JOIN memory_vectors v USING (seq)").fetchall()
        assert [memory_id for memory_id, _ in stored] == [words]
        vector = np.frombuffer(stored[0][1], dtype=np.float16).astype(np.float32)
        assert abs(float(np.linalg.norm(vector)) - 1) < 1e-3
        assert mem.get(none) is not None  # stored, with no vector that would never be found
        assert mem.backfill_vectors() == 0


class RefusingEmbedder(HashEmbedder):
    """Refuses any text that mentions a secret, as a model refuses one too long for it."""

    asked = 0

    def embed(self, texts):
        self.asked += 1
        if any("secret" in text for text in texts):
            raise EmbedderInputError("input refused")
        return super().embed(texts)


def test_a_custom_embedder_can_refuse_one_text_without_failing_the_others(tmp_path: Path):
    db = tmp_path / "m.db"
    refusing = RefusingEmbedder(32)
    with Mnemosyne(db_path=db, embedder=refusing) as mem:
        ids = mem.remember_many([f"fact {i} about the rollout" for i in range(9)] + ["the secret is hunter2"])
        assert vectors_in(db) == 9
        assert mem.backfill_vectors() == 0
        asked = refusing.asked
        assert mem.backfill_vectors() == 0 and refusing.asked == asked  # asked once, not by every pass
        assert ids[-1] in [m.id for m in mem.recall("secret")]


def test_a_failing_embedder_loses_no_write_and_is_backfilled(tmp_path: Path, caplog):
    db = tmp_path / "m.db"
    failing = FailingEmbedder(64)
    with Mnemosyne(db_path=db, embedder=failing) as mem:
        ids = [mem.remember(f"deploy note {i} about the kestrel rollout") for i in range(5)]
        # Stored and found lexically; the model was tried once, then left alone.
        assert len(mem.recall("kestrel rollout", top_k=10)) == 5
        assert failing.calls == 1
        assert sum("failed" in r.message for r in caplog.records) == 1
    assert vectors_in(db) == 0
    healthy = HashEmbedder(64)
    with Mnemosyne(db_path=db, embedder=healthy) as mem:
        # Counted whether the background pass begun on open or this call embedded them.
        assert mem.backfill_vectors() == 5
        assert mem.backfill_vectors() == 0
        assert vectors_in(db) == 5
        hits = mem.recall("kestrel rollout", top_k=5, explain=True)
        assert {m.id for m in hits} == set(ids)
        assert all(m.explanation["dense"] > 0 for m in hits)


def recorded_embedder(db: Path) -> dict | None:
    with sqlite3.connect(db) as conn:
        row = conn.execute("SELECT value FROM meta WHERE key = 'embedder'").fetchone()
    return None if row is None else json.loads(row[0])


def test_an_instance_opened_without_auto_backfill_reads_without_writing_a_vector(tmp_path: Path):
    db = tmp_path / "m.db"
    with Mnemosyne(db_path=db, embedder="none") as mem:
        ids = mem.remember_many([f"note {i} on the kestrel rollout" for i in range(100)])
    with Mnemosyne(db_path=db, embedder=HashEmbedder(64), auto_backfill=False) as reader:
        assert not any(t.name == "mnemosyne-backfill" for t in threading.enumerate())
        assert {m.id for m in reader.recall("kestrel rollout", top_k=100)} == set(ids)
        assert reader.get_stats().total == 100 and len(reader.timeline()) == 100
    assert (vectors_in(db), recorded_embedder(db)) == (0, None)
    with pytest.raises(InvalidInputError, match="auto_backfill"):
        Mnemosyne(db_path=db, auto_backfill="no")  # type: ignore[arg-type]
    # By default, opening fills them in (in the background) and that records the model:
    # the first vectors written, as with a write made with it.
    with Mnemosyne(db_path=db, embedder=HashEmbedder(64)) as mem:
        assert mem.backfill_vectors() == 100
    assert (vectors_in(db), recorded_embedder(db)["name"]) == (100, "test-hash")


def test_a_memory_another_process_stored_without_a_vector_is_ranked_by_its_words(tmp_path: Path):
    db = tmp_path / "m.db"
    with Mnemosyne(db_path=db, embedder=HashEmbedder(64)) as mem:  # a long-running agent with its model
        for text in ["we should cook pasta tonight", "the oven needs cleaning", "buy basil and tomatoes"]:
            mem.remember(text)
        mem.recall("pasta")
        writer = "import sys\nfrom mnemosyne import Mnemosyne\n" \
                 "Mnemosyne(db_path=sys.argv[1], embedder='none').remember('the zebra crossing was repainted')\n"
        subprocess.run([sys.executable, "-c", writer, str(db)], check=True, timeout=60)
        (top,) = mem.recall("zebra crossing", top_k=1, explain=True)
        assert top.content == "the zebra crossing was repainted"
        assert top.explanation is not None and top.explanation["dense"] > 0 and top.explanation["dense_window"] > 0
        # Embedded for the recall, it scores for meaning as its copy with a vector does
        # (one result: the copies are one text).
        mem.remember("the zebra crossing was repainted", allow_duplicate=True)
        (both,) = [m for m in mem.recall("zebra crossing", top_k=2, explain=True) if "zebra" in m.content]
        assert both.explanation is not None and both.explanation["copies"] == 1
        assert both.explanation["dense"] == pytest.approx(top.explanation["dense"], abs=0.01)


def test_asking_for_a_backfill_while_the_model_fails_is_an_error(tmp_path: Path):
    with Mnemosyne(db_path=tmp_path / "m.db", embedder=FailingEmbedder(64)) as mem:
        mem.remember("stored without a vector")
        with pytest.raises(EmbedderError, match="1 memories still have no vector"):
            mem.backfill_vectors()
        assert mem.sleep().active_after == 1  # sleep is no explicit request: it goes on


class FlakyEmbedder(HashEmbedder):
    """Down until switched back on."""

    down = True

    def embed(self, texts):
        if self.down:
            raise EmbedderError("the model server is restarting")
        return super().embed(texts)


def test_memories_stored_while_the_model_failed_get_vectors_once_it_is_back(tmp_path: Path, monkeypatch):
    import time

    from mnemosyne import embedding

    monkeypatch.setattr(embedding, "RETRY_AFTER_S", 0.0)  # the model is tried again at once
    db = tmp_path / "m.db"
    flaky = FlakyEmbedder(64)
    with Mnemosyne(db_path=db, embedder=flaky) as mem:
        mem.remember_many(["stored while the model was down", "also stored while it was down"])
        assert vectors_in(db) == 0
        flaky.down = False
        mem.sleep()  # idle time: the vectors are filled in
        assert vectors_in(db) == 2
        flaky.down = True
        mem.remember("another one stored while it was down")
        flaky.down = False
        mem.remember("the first write after it is back")  # starts filling in the rest
        mem.backfill_vectors()  # waits for that pass
        assert vectors_in(db) == 4
        flaky.down = True
        mem.remember("and one more while it was down")
        flaky.down = False
        mem.recall("a query finds the model back")  # so does a recall: a pass starts in the background
        deadline = time.monotonic() + 30
        while vectors_in(db) < 5 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert vectors_in(db) == 5


def test_a_backfill_a_session_started_outlives_that_session(tmp_path: Path, monkeypatch):
    import time

    from mnemosyne import embedding

    # A server's sessions share one database and one backfill pass: closing the
    # session whose write found the model back (evicted, say) must not end it.
    monkeypatch.setattr(embedding, "RETRY_AFTER_S", 0.0)
    db = tmp_path / "m.db"
    flaky = FlakyEmbedder(64)
    with Mnemosyne(session_id="server", db_path=db, embedder=flaky) as base:
        writer = base._for_session("writer")
        writer.remember_many([f"note {i} stored while the model was down" for i in range(300)])
        flaky.down = False
        writer.remember("the first write after it is back")  # starts the pass
        writer.close()
        deadline = time.monotonic() + 30
        while vectors_in(db) < 301 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert vectors_in(db) == 301
        again = base._for_session("writer")
        assert again.recall("note 7 stored", top_k=1, explain=True)[0].explanation["dense"] > 0
        again.close()


def test_stats_name_the_embedder_another_process_switched_to(tmp_path: Path):
    db = tmp_path / "m.db"
    with Mnemosyne(db_path=db, embedder=HashEmbedder(64)) as long_lived:
        long_lived.remember("the cat sat on the mat")
        with Mnemosyne(db_path=db, embedder=HashEmbedder(64)) as other:
            other.reembed(HashEmbedder(32))
        assert long_lived.get_stats().embedder == (
            "test-hash:hash-v1-32 (32 dims), not this process's test-hash:hash-v1-64 (64 dims)")


def test_a_process_left_on_the_old_model_says_why_it_fills_in_no_vectors(tmp_path: Path):
    db = tmp_path / "m.db"
    with Mnemosyne(db_path=db, embedder=HashEmbedder(64)) as long_lived:
        with Mnemosyne(db_path=db, embedder=HashEmbedder(64)) as other:
            other.reembed(HashEmbedder(32))
        long_lived.remember("written with the old model, kept without a vector")
        with pytest.raises(EmbedderError, match="1 memories still have no vector: .*another process switched"):
            long_lived.backfill_vectors()


class LocallyNamed(HashEmbedder):
    """A user's own on-device model that calls itself "local"."""

    name = "local"


def test_a_database_recorded_by_another_local_model_is_not_embedded_by_the_bundled_one(tmp_path: Path, caplog):
    pytest.importorskip("onnxruntime", reason="the 'local' extra (onnxruntime) is not installed")
    db = tmp_path / "m.db"
    with Mnemosyne(db_path=db, embedder=LocallyNamed(384)) as mem:
        mem.remember("the font is Inter")
    with caplog.at_level("WARNING", logger="mnemosyne"), Mnemosyne(db_path=db) as mem:  # the recorded one
        assert mem.get_stats().embedder == "local:hash-v1-384 (384 dims), unavailable here"
        assert "'local' builds local:all-MiniLM" in caplog.text
        mem.remember("invoices go out monthly")
        with pytest.raises(EmbedderError, match="1 memories still have no vector: no embedder can make them"):
            mem.backfill_vectors()


class ShortRowsEmbedder(HashEmbedder):
    """Drops a row, as a misbehaving embedding server might."""

    def embed(self, texts):
        return super().embed(texts)[:-1]


def test_an_embedder_returning_too_few_vectors_loses_no_write(tmp_path: Path, caplog):
    db = tmp_path / "m.db"
    with Mnemosyne(db_path=db, embedder=ShortRowsEmbedder(64)) as mem:
        ids = mem.remember_many([f"release note {i} for the heron service" for i in range(3)])
        assert len(set(ids)) == 3
        assert len(mem.recall("heron release", top_k=10)) == 3
    assert any("shape (2, 64) for 3 texts" in r.message for r in caplog.records)
    assert vectors_in(db) == 0  # never a vector paired with the wrong memory


def test_vectors_written_by_another_process_are_searched_without_reopening(tmp_path: Path):
    db = tmp_path / "m.db"
    with Mnemosyne(session_id="reader", db_path=db, embedder=HashEmbedder(64)) as mem:
        mem.remember("warm up the index", scope="global")
        mem.recall("warm")
        code = (
            "import sys\nfrom mnemosyne import Mnemosyne\nfrom mnemosyne.testing import HashEmbedder\n"
            "with Mnemosyne(session_id='writer', db_path=sys.argv[1], embedder=HashEmbedder(64)) as m:\n"
            "    m.remember('zyxwvut quokka migration plan', scope='global')\n"
        )
        subprocess.run([sys.executable, "-c", code, str(db)], check=True, timeout=120)
        hit = mem.recall("zyxwvut quokka", top_k=1, explain=True)[0]
        assert hit.content == "zyxwvut quokka migration plan"
        assert hit.explanation["dense"] > 0.5  # found through its vector, not only its words


def test_filters_apply_before_top_k_for_vectors_too(tmp_path: Path):
    with Mnemosyne(session_id="a", db_path=tmp_path / "m.db", embedder=HashEmbedder(64)) as mem:
        for i in range(30):
            mem.remember(f"release checklist item {i}", source="noise", created_at=NOW - timedelta(days=i))
        wanted = mem.remember("release checklist owner is Dana", source="ops", created_at=NOW)
        assert [m.id for m in mem.recall("release checklist", top_k=1, source="ops")] == [wanted]
        recent = mem.recall("release checklist", top_k=50, since=NOW - timedelta(days=2), now=NOW)
        assert {m.created_at for m in recent} <= {NOW - timedelta(days=d) for d in (0, 1, 2)}


def test_explain_returns_every_component(tmp_path: Path):
    with Mnemosyne(db_path=tmp_path / "m.db", embedder=HashEmbedder(64)) as mem:
        mem.remember("the kestrel project ships on friday", importance=0.9, created_at=NOW)
        hit = mem.recall("kestrel ships", now=NOW, explain=True)[0]
        assert {"content", "context", "dense", "dense_window", "source", "episode_match", "relevance", "episode",
                "importance", "recency", "time_match", "access", "superseded", "other_role", "told",
                "score"} <= set(hit.explanation)
        assert hit.explanation["score"] == pytest.approx(hit.score)
        assert hit.explanation["importance"] > 1  # important memories are lifted
        assert mem.recall("kestrel ships")[0].explanation is None


@pytest.mark.parametrize("lunch_reply", ["it ships on friday!", "it ships on friday"])
def test_a_reply_is_found_by_what_its_neighbours_mean(tmp_path: Path, lunch_reply: str):
    """Two replies of the same words; the one whose neighbours are about the query
    scores higher by meaning, as it does by words. Identical ones are one result:
    that one."""
    with Mnemosyne(db_path=tmp_path / "m.db", embedder=HashEmbedder(64)) as mem:
        for offset, (before, reply, after) in enumerate([
            ("the kestrel rollout is planned", "it ships on friday", "the kestrel canary looks healthy"),
            ("the lunch menu is posted", lunch_reply, "the parking lot is closed"),
        ]):
            start = NOW - timedelta(days=offset)
            mem.remember(before, created_at=start)
            mem.remember(reply, created_at=start + timedelta(minutes=1), allow_duplicate=True)
            mem.remember(after, created_at=start + timedelta(minutes=2))
        replies = [m for m in mem.recall("kestrel rollout ships", top_k=6, now=NOW, explain=True)
                   if m.content.startswith("it ships on friday")]
        if lunch_reply == "it ships on friday":
            assert [(m.created_at, m.explanation["copies"]) for m in replies] == [(NOW + timedelta(minutes=1), 1)]
            return
        assert [m.created_at for m in replies] == [NOW + timedelta(minutes=1), NOW - timedelta(days=1, minutes=-1)]
        kestrel, lunch = (m.explanation for m in replies)
        assert kestrel["dense"] == pytest.approx(lunch["dense"])
        assert kestrel["dense_window"] > lunch["dense_window"]


def test_a_time_named_in_the_query_favours_memories_from_then(tmp_path: Path):
    with Mnemosyne(db_path=tmp_path / "m.db", embedder="none") as mem:
        old = mem.remember("standup: the API review is pending", created_at=NOW - timedelta(days=60))
        new = mem.remember("standup: the API review is pending", created_at=NOW - timedelta(days=1),
                           allow_duplicate=True)
        assert mem.recall("API review yesterday", now=NOW)[0].id == new
        assert mem.recall("API review in April", now=NOW)[0].id == old


def test_reembed_switches_models_in_one_step(tmp_path: Path):
    db = tmp_path / "m.db"
    with Mnemosyne(db_path=db, embedder=HashEmbedder(64)) as mem:
        for i in range(7):
            mem.remember(f"fact {i} about the quokka migration")
        progress: list[tuple[int, int]] = []
        assert mem.reembed(HashEmbedder(32), progress=lambda done, total: progress.append((done, total))) == 7
        assert progress[-1] == (7, 7)
        assert mem.get_stats().embedder == "test-hash:hash-v1-32 (32 dims)"
        assert len(mem.recall("quokka migration")) == 7
        mem.remember("written after the switch about the quokka")
    with Mnemosyne(db_path=db) as mem:  # the new embedder is the recorded one now
        assert vectors_in(db, dimension=32) == 8
        with pytest.raises(InvalidInputError, match="needs an embedder"):
            mem.reembed("none")
        for bad in (123, object()):
            with pytest.raises(InvalidInputError, match="embedder must be"):
                mem.reembed(bad)


def test_cli_reembed_and_stats(tmp_path: Path):
    local_model_or_skip()
    db = str(tmp_path / "cli.db")
    env_none = {"MNEMOSYNE_EMBEDDER": "none"}
    run_cli("remember", "the font is Inter", "--db", db, env=env_none)
    run_cli("remember", "invoices go out monthly", "--db", db, env=env_none)
    assert json.loads(run_cli("stats", "--json", "--db", db, env=env_none))["embedder"] == "none"
    done = json.loads(run_cli("reembed", "--embedder", "local", "--json", "--db", db))
    assert done["embedded"] == 2 and done["embedder"].startswith("local:")
    hits = json.loads(run_cli("recall", "which typeface", "-k", "1", "--json", "--db", db))
    assert hits[0]["content"] == "the font is Inter"
    assert run_cli("reembed", "--db", db, code=2) == ""


def run_cli(*args: str, env: dict[str, str] | None = None, code: int = 0, stream: str = "stdout") -> str:
    import os

    result = subprocess.run(
        [sys.executable, "-m", "mnemosyne", *args], capture_output=True, text=True, timeout=120,
        env={**os.environ, **(env or {})},
    )
    assert result.returncode == code, result.stderr
    return str(getattr(result, stream))


def vectors_in(db: Path, dimension: int | None = None) -> int:
    with sqlite3.connect(db) as conn:
        blobs = [blob for (blob,) in conn.execute("SELECT vector FROM memory_vectors")]
    if dimension is not None:
        assert all(len(np.frombuffer(b, dtype=np.float16)) == dimension for b in blobs)
    return len(blobs)


def test_memories_past_valid_until_are_hidden_but_kept(tmp_path: Path):
    with Mnemosyne(db_path=tmp_path / "m.db", embedder=HashEmbedder(64)) as mem:
        offer = mem.remember("the spring discount code is KESTREL10", created_at=NOW - timedelta(days=7),
                            valid_until=NOW - timedelta(days=1))
        mem.remember("the summer discount code is QUOKKA20")
        assert [m.content for m in mem.recall("discount code", now=NOW)] == [
            "the summer discount code is QUOKKA20"]
        assert offer in {m.id for m in mem.recall("discount code", now=NOW - timedelta(days=3))}
        assert offer in {m.id for m in mem.recall("discount code", now=NOW, include_consolidated=True)}
        assert mem.get(offer) is not None


def test_a_process_left_on_the_old_model_never_mixes_vectors(tmp_path: Path):
    db = tmp_path / "m.db"
    with Mnemosyne(db_path=db, embedder=HashEmbedder(64)) as old, \
            Mnemosyne(db_path=db, embedder=HashEmbedder(64)) as switcher:
        old.remember("the quokka migration starts monday")
        old.recall("quokka")  # its index holds 64-dim vectors
        switcher.reembed(HashEmbedder(32))
        # The old process still answers (lexically), writes without a vector, and
        # the switched process fills that vector in with the new model.
        assert old.recall("quokka migration")[0].content == "the quokka migration starts monday"
        old.remember("the quokka migration moved to tuesday")
        assert switcher.backfill_vectors() == 1
        assert vectors_in(db, dimension=32) == 2


def test_exiting_while_the_model_backfills_in_the_background_is_clean(tmp_path: Path):
    # A daemon thread still inside the model's native code when Python finalises
    # used to abort the process ("terminate called without an active exception").
    local_model_or_skip()
    db = tmp_path / "m.db"
    with Mnemosyne(db_path=db, embedder="none") as mem:
        mem.remember_many([f"memory number {i} waiting for its vector" for i in range(3000)])
    script = (
        "import sys\nfrom mnemosyne import Mnemosyne\n"
        "mem = Mnemosyne(db_path=sys.argv[1])\nprint(len(mem.recall('memory number 7')))\n"
    )
    for _ in range(3):
        done = subprocess.run([sys.executable, "-c", script, str(db)], capture_output=True, text=True, timeout=120)
        assert (done.returncode, done.stderr) == (0, ""), done.stderr
        assert run_cli("recall", "memory number 7", "--db", str(db), "--json").startswith("[")


class SlowHashEmbedder(HashEmbedder):
    """The test embedder at a model's pace: 20 ms a batch."""

    def embed(self, texts):
        import time

        time.sleep(0.02)
        return super().embed(texts)


@contextlib.contextmanager
def another_process_writing(db: Path) -> Iterator[None]:
    """Another process (embedder "none") storing memories as fast as it can, well under
    way (300 memories in) when the block starts, until it ends."""
    stop = db.with_name("stop")
    writer = (
        "import os, sys\nfrom mnemosyne import Mnemosyne\n"
        "with Mnemosyne(session_id='lexical', db_path=sys.argv[1], embedder='none') as mem:\n"
        "    i = 0\n"
        "    while not os.path.exists(sys.argv[2]):\n"
        "        mem.remember(f'note {i} stored without a vector'); i += 1\n"
    )
    process = subprocess.Popen([sys.executable, "-c", writer, str(db), str(stop)])
    try:
        with Mnemosyne(db_path=db, embedder="none") as watcher:
            while watcher.get_stats().total < 300:
                pass
        yield
    finally:
        stop.touch()
        assert process.wait(timeout=60) == 0


def within_a_minute(call: Callable[[], int]) -> int | None:
    """What ``call`` returns, if it returns within 60 s (run in a thread of its own)."""
    returned: list[int] = []
    thread = threading.Thread(target=lambda: returned.append(call()), daemon=True)
    thread.start()
    thread.join(timeout=60)
    return returned[0] if returned else None


class SlowerThanTheWriter(HashEmbedder):
    """A remote model's pace: 0.2 s a request, slower than a writer adds memories."""

    def embed(self, texts):
        import time

        time.sleep(0.2)
        return super().embed(texts)


def test_reembed_ends_while_another_process_keeps_writing(tmp_path: Path):
    db = tmp_path / "m.db"
    with Mnemosyne(db_path=db, embedder=HashEmbedder()) as mem:
        mem.remember_many([f"memory {i} before the switch" for i in range(200)])
    with another_process_writing(db), Mnemosyne(db_path=db, embedder=HashEmbedder()) as mem:
        # Before, it chased the writer for as long as the writer wrote.
        switched = within_a_minute(lambda: mem.reembed(SlowerThanTheWriter(32)))
        assert switched is not None and switched >= 300
        assert mem.get_stats().embedder == "test-hash:hash-v1-32 (32 dims)"


def test_backfill_ends_while_another_process_keeps_writing_without_vectors(tmp_path: Path):
    db = tmp_path / "m.db"
    with Mnemosyne(db_path=db, embedder=HashEmbedder()) as mem:
        mem.remember("records which model this database uses")
    with another_process_writing(db), Mnemosyne(db_path=db, embedder=SlowHashEmbedder()) as mem:
        # Returns once what was missing when it started has a vector, however fast
        # the other process adds more (before, it chased them for ever).
        progress: list[tuple[int, int]] = []
        filled = within_a_minute(lambda: mem.backfill_vectors(lambda *step: progress.append(step)))
        assert filled is not None and filled >= 299
        # The progress total counts only that work, so the bar ends full.
        assert progress[-1] == (filled, filled)


def test_similarities_are_scaled_alike_before_and_after_a_sleep_merges_a_copy(tmp_path: Path):
    import random
    import time

    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi".split()
    pick = random.Random(1)
    old = time.time() - 10 * 86_400  # episodes long closed: sleep may merge them
    with Mnemosyne(db_path=tmp_path / "m.db", embedder=HashEmbedder(64), dedupe_window=0) as mem:
        mem.remember_many([{"content": " ".join(pick.sample(words, 6)) + f" item{i}", "created_at": old + i * 7200}
                           for i in range(80)])
        for _ in range(2):  # a copy sleep merges, near the query: a vector hit folded away
            mem.remember("alpha beta gamma delta report", created_at=old + 200 * 7200, allow_duplicate=True)

        def dense() -> dict[str, float]:
            found = mem.recall("alpha beta gamma delta", top_k=10, explain=True)
            return {m.content: m.explanation["dense"] for m in found if "report" not in m.content}

        before = dense()
        assert mem.sleep().merged == 1
        after = dense()
        both = before.keys() & after.keys()
        assert len(both) >= 5 and all(before[text] == pytest.approx(after[text]) for text in both)


def test_the_field_of_meaning_does_not_depend_on_top_k(tmp_path: Path):
    """How far a memory stands above the field by meaning does not depend on top_k:
    the field is the same deep neighbour, however many results are asked for. (Here
    every memory is a candidate either way, so nothing else could move the order.)"""
    words = "deploy cache budget invoice palette font server region backup alert token queue".split()
    rng = np.random.default_rng(7)
    texts = [" ".join(rng.choice(words, size=4)) + f" item{i}" for i in range(70)]
    source = tmp_path / "m.db"
    with Mnemosyne(session_id="s", db_path=source, embedder=HashEmbedder(32), dedupe_window=0) as mem:
        mem.remember_many(texts)
    queries = [" ".join(rng.choice(words, size=2)) for _ in range(12)]

    def top(k: int) -> list[list[str]]:
        db = tmp_path / f"top{k}.db"  # a copy: recalls count as past use, which ranking reads
        db.write_bytes(source.read_bytes())
        with Mnemosyne(session_id="s", db_path=db, embedder=HashEmbedder(32)) as copy:
            return [[m.id for m in copy.recall(query, top_k=k)] for query in queries]

    assert [ids[:3] for ids in top(20)] == top(3)
