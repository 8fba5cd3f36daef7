"""Reliability suite: many agents, one database, killed at random, retrying, fuzzed.

    python bench/reliability.py                  # the full suite (several minutes)
    python bench/reliability.py --quick          # a smaller run of every scenario

Scenarios (real processes on a real SQLite file; see reliability_harness.py):

- Load: W writer processes x N ``remember`` each, R processes recalling in a loop,
  one process taking ``create_backup`` every few seconds (and ``sleep()`` once it
  exists). Reports errors surfaced, memories present, duplicates, remember latency
  under contention, integrity, and whether every backup restores and verifies.
- Crash: start a writer (remember, remember_many, update, forget, create_backup,
  sleep), SIGKILL it at a random moment, reopen, run doctor; repeat.
- Retry storm: P processes each remembering the same K idempotency keys twice.
- Stateful fuzz: hypothesis RuleBasedStateMachine (see reliability_fuzz.py).

Prints one Markdown table; the short versions run in tests/test_reliability.py.
"""

from __future__ import annotations

import argparse
import platform
import sqlite3
import sys
import time
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

sys.path.insert(0, str(Path(__file__).resolve().parent))

import reliability_harness as harness  # noqa: E402
from reliability_fuzz import MemoryMachine  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="smaller runs of every scenario")
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--per-writer", type=int, default=1000)
    parser.add_argument("--readers", type=int, default=4)
    parser.add_argument("--backup-every", type=float, default=3.0)
    parser.add_argument("--crashes", type=int, default=200)
    parser.add_argument("--storm-processes", type=int, default=4)
    parser.add_argument("--storm-keys", type=int, default=500)
    parser.add_argument("--fuzz-examples", type=int, default=100)
    args = parser.parse_args()
    if args.quick:
        args.per_writer, args.crashes, args.storm_keys, args.fuzz_examples = 200, 20, 100, 20
        args.backup_every = 1.0

    rows: list[tuple[str, str, str, str]] = []
    work = harness.fresh_dir("mnemo-reliability-")
    try:
        print(f"load: {args.writers} writers x {args.per_writer} ...", file=sys.stderr)
        (work / "load").mkdir()
        load = harness.run_load(work / "load", args.writers, args.per_writer, args.readers, args.backup_every)
        expected = args.writers * args.per_writer
        ms = lambda q: f"{load.percentile(q) * 1000:.1f} ms"  # noqa: E731
        rows += [
            ("Load", "errors surfaced", str(len(load.errors)), _verdict(not load.errors)),
            ("Load", "memories present", f"{load.memories:,} of {expected:,}",
             _verdict(load.memories == expected)),
            ("Load", "duplicates", str(load.duplicates), _verdict(load.duplicates == 0)),
            ("Load", "remember latency p50 / p95 / max",
             f"{ms(0.5)} / {ms(0.95)} / {max(load.latencies) * 1000:.0f} ms", ""),
            ("Load", "remember throughput (all writers)",
             f"{expected / load.seconds:,.0f}/s over {load.seconds:.1f} s", ""),
            ("Load", "recalls by readers during the run", f"{load.recalls:,}", ""),
            ("Load", "integrity_check / doctor", f"{load.integrity} / {'ok' if load.doctor_ok else 'FAIL'}",
             _verdict(load.integrity == "ok" and load.doctor_ok)),
            ("Load", "backups taken, restored and verified", f"{load.backups_restored} of {load.backups}",
             _verdict(load.backups > 0 and load.backups_restored == load.backups)),
            ("Load", "sleep() runs", str(load.sleeps) if load.sleeps else "n/a (sleep not built yet)", ""),
        ]
        for error in load.errors[:5]:
            print("  load error:", error, file=sys.stderr)

        print(f"crash: {args.crashes} kill -9 iterations ...", file=sys.stderr)
        (work / "crash").mkdir()
        start = time.perf_counter()
        crash = harness.run_crash(work / "crash", args.crashes, seed=1)
        rows += [
            ("Crash", "clean after kill -9 (opens, integrity, doctor)", f"{crash.clean}/{crash.iterations}",
             _verdict(crash.clean == crash.iterations)),
            ("Crash", "memories at the end / time",
             f"{crash.memories:,} / {time.perf_counter() - start:.0f} s", ""),
        ]
        for failure in crash.failures[:5]:
            print("  crash failure:", failure, file=sys.stderr)

        print("retry storm ...", file=sys.stderr)
        (work / "storm").mkdir()
        storm = harness.run_retry_storm(work / "storm", args.storm_processes, args.storm_keys)
        rows += [
            ("Retry storm", f"{storm.processes} processes x {storm.keys} keys x 2 tries",
             f"{storm.memories} memories from {storm.attempts:,} calls",
             _verdict(storm.memories == storm.keys and not storm.errors and storm.consistent_ids)),
            ("Retry storm", "every process got the same id per key", str(storm.consistent_ids),
             _verdict(storm.consistent_ids)),
        ]

        print(f"stateful fuzz: {args.fuzz_examples} examples ...", file=sys.stderr)
        start = time.perf_counter()
        fuzz_error = ""
        try:
            run_state_machine_as_test(MemoryMachine, settings=settings(
                max_examples=args.fuzz_examples, stateful_step_count=30, deadline=None,
                suppress_health_check=list(HealthCheck)))
        except Exception as exc:  # noqa: BLE001 - reported in the table
            fuzz_error = f"{type(exc).__name__}: {str(exc)[:200]}"
            print("  fuzz failure:", exc, file=sys.stderr)
        outcome = fuzz_error or f"passed in {time.perf_counter() - start:.0f} s"
        rows.append(("Stateful fuzz", f"{args.fuzz_examples} runs x up to 30 steps, invariants after each",
                     outcome, _verdict(not fuzz_error)))
    finally:
        harness.remove_dir(work)

    print(f"\nMnemosyne reliability ({platform.python_version()}, SQLite {sqlite3.sqlite_version}, "
          f"{platform.machine()}, {_cpus()} CPUs)\n")
    print("| scenario | measure | result | target |")
    print("|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


def _verdict(ok: bool) -> str:
    return "met" if ok else "**MISSED**"


def _cpus() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


if __name__ == "__main__":
    main()
