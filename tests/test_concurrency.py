"""Threads of one process sharing one Mnemosyne, and contention that always resolves."""

from __future__ import annotations

import threading
from pathlib import Path

from mnemosyne import Mnemosyne
from mnemosyne.dr.doctor import diagnose


def test_threads_write_and_read_one_instance(tmp_path: Path):
    errors: list[BaseException] = []
    with Mnemosyne(session_id="s", db_path=tmp_path / "m.db") as mem:
        def writer(w: int) -> None:
            try:
                for i in range(60):
                    mem.remember(f"thread {w} wrote item {i}")
                    if i % 10 == 0:
                        mem.remember_many([f"thread {w} batch {i} part {j}" for j in range(5)])
            except BaseException as exc:  # noqa: BLE001 - collected and asserted empty
                errors.append(exc)

        def reader() -> None:
            try:
                for _ in range(100):
                    mem.recall("thread wrote item", top_k=5)
                    mem.get_stats()
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)

        threads = [threading.Thread(target=writer, args=(w,)) for w in range(6)]
        threads += [threading.Thread(target=reader) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert mem.get_stats().total == 6 * (60 + 6 * 5)
    assert diagnose(tmp_path / "m.db").ok
