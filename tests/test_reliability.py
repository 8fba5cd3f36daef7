"""Short versions of the reliability suite (bench/reliability.py runs the full ones).

Real processes on real files: concurrent writers, readers and backups; writers
killed with SIGKILL; processes retrying the same idempotency keys; and a stateful
fuzz of remember/update/forget/backup/restore/reopen.
"""

from __future__ import annotations

import sys
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import reliability_harness as harness  # noqa: E402
from reliability_fuzz import MemoryMachine  # noqa: E402


def test_load_with_writers_readers_and_backups(tmp_path: Path):
    result = harness.run_load(tmp_path, writers=4, per_writer=150, readers=2, backup_every=0.3)
    assert result.errors == []
    assert result.memories == 600 and result.duplicates == 0
    assert result.integrity == "ok" and result.doctor_ok
    assert result.recalls > 0
    assert result.backups >= 1 and result.backups_restored == result.backups


def test_kill_9_at_random_moments_leaves_a_clean_database(tmp_path: Path):
    result = harness.run_crash(tmp_path, iterations=8, max_delay=0.4, seed=7)
    assert result.failures == []
    assert result.clean == 8
    assert result.memories > 0


def test_retry_storm_stores_each_key_once(tmp_path: Path):
    result = harness.run_retry_storm(tmp_path, processes=4, keys=120)
    assert result.errors == []
    assert result.memories == 120
    assert result.consistent_ids


def test_stateful_fuzz_keeps_every_invariant():
    run_state_machine_as_test(
        MemoryMachine,
        settings=settings(max_examples=12, stateful_step_count=15, deadline=None,
                          suppress_health_check=list(HealthCheck)),
    )
