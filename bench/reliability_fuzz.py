"""A hypothesis state machine for Mnemosyne's invariants (shared by bench and tests).

Rules: remember, remember_many, retry with an idempotency key, re-remember the same
content, update, forget, back up, restore, reopen (and sleep, once it exists).
After every step: the count matches a model, doctor finds nothing (integrity, no
orphan or missing index entry, every memory audited, nothing lost), and every
active memory is recallable by the distinctive phrase it was stored with.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, invariant, precondition, rule

from mnemosyne import Mnemosyne
from mnemosyne.dr.doctor import diagnose
from mnemosyne.dr.recovery import create_backup, restore_backup

# Any text (NUL is refused by design), followed by a phrase nothing else contains.
texts = st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=40)


class MemoryMachine(RuleBasedStateMachine):
    ids = Bundle("ids")

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="mnemo-fuzz-"))
        self.db = self.dir / "fuzz.db"
        self.mem = Mnemosyne(session_id="fuzz", db_path=self.db)
        self.model: dict[str, tuple[str, str]] = {}  # id -> (content, phrase)
        self.backup: dict[str, tuple[str, str]] | None = None  # the model at the last backup
        self.backups = 0
        self.counter = 0

    def _phrase(self) -> str:
        # The same in every run of the same steps: a failure replays as it happened.
        self.counter += 1
        return f"qv{self.counter}kz"

    @rule(target=ids, text=texts, scope=st.sampled_from(["session", "global"]))
    def remember(self, text: str, scope: str) -> str:
        phrase = self._phrase()
        content = f"{text} {phrase}"
        memory_id = self.mem.remember(content, scope=scope)
        self.model[memory_id] = (content, phrase)
        return memory_id

    @rule(target=ids, texts_=st.lists(texts, min_size=1, max_size=5))
    def remember_many(self, texts_: list[str]):
        items = []
        for text in texts_:
            phrase = self._phrase()
            items.append((f"{text} {phrase}", phrase))
        new_ids = self.mem.remember_many([content for content, _ in items])
        for memory_id, item in zip(new_ids, items, strict=True):
            self.model[memory_id] = item
        return new_ids[0]

    @rule(target=ids, text=texts)
    def retry_with_key(self, text: str) -> str:
        phrase = self._phrase()
        content = f"{text} {phrase}"
        first = self.mem.remember(content, idempotency_key=phrase, allow_duplicate=True)
        again = self.mem.remember(content, idempotency_key=phrase, allow_duplicate=True)
        assert first == again
        self.model[first] = (content, phrase)
        return first

    @precondition(lambda self: bool(self.model))
    @rule(memory_id=ids)
    def remember_same_content_again(self, memory_id: str) -> None:
        if memory_id in self.model:
            content, _ = self.model[memory_id]
            memory = self.mem.get(memory_id)
            assert memory is not None
            again = self.mem.remember(content, scope=memory.scope)
            # Within the dedupe window an identical memory is not stored twice.
            assert again == memory_id

    @rule(memory_id=ids, text=texts)
    def update(self, memory_id: str, text: str) -> None:
        if memory_id not in self.model:
            return
        phrase = self._phrase()
        content = f"{text} {phrase}"
        self.mem.update(memory_id, content=content)
        self.model[memory_id] = (content, phrase)

    @rule(memory_id=consumes(ids))
    def forget(self, memory_id: str) -> None:
        if memory_id in self.model:
            self.mem.forget(memory_id)
            del self.model[memory_id]

    @rule()
    def take_backup(self) -> None:
        # A backup never replaces another: each one gets the next name.
        self.backups += 1
        create_backup(db_path=self.db, backup_path=self._backup_path())
        self.backup = dict(self.model)

    def _backup_path(self) -> Path:
        return self.dir / f"fuzz-{self.backups}.bak"

    @precondition(lambda self: self.backup is not None)
    @rule()
    def restore(self) -> None:
        self.mem.close()
        restore_backup(backup_path=self._backup_path(), db_path=self.db)
        self.mem = Mnemosyne(session_id="fuzz", db_path=self.db)
        assert self.backup is not None
        self.model = dict(self.backup)

    @rule()
    def reopen(self) -> None:
        self.mem.close()
        self.mem = Mnemosyne(session_id="fuzz", db_path=self.db)

    @rule()
    def sleep(self) -> None:
        self.mem.sleep()

    @invariant()
    def counts_match_the_model(self) -> None:
        assert self.mem.get_stats().total == len(self.model)

    @invariant()
    def doctor_finds_nothing(self) -> None:
        report = diagnose(self.db)
        assert report.ok, [f"{c.name}: {c.detail}" for c in report.problems]

    @invariant()
    def every_memory_is_recallable_by_its_phrase(self) -> None:
        for memory_id, (content, phrase) in self.model.items():
            # Sleep may have consolidated it: hidden from default recall, never lost.
            # Its phrase is also in the episode window of its two neighbours on each
            # side, which may read closer to the phrase by meaning than a memory whose
            # phrase follows odd text: it ranks in the top 5, not always the top 3.
            hits = self.mem.recall(phrase, top_k=5, include_consolidated=True)
            assert memory_id in [h.id for h in hits], (memory_id, phrase)
            assert next(h.content for h in hits if h.id == memory_id) == content

    def teardown(self) -> None:
        self.mem.close()
        shutil.rmtree(self.dir, ignore_errors=True)
