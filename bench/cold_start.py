"""Cold start of the ``mnemosyne`` command: wall time of whole processes.

    python bench/cold_start.py            # 20 runs each
    python bench/cold_start.py --runs 50

Each row is a fresh process, as a shell script or an agent's tool call pays it:
interpreter start, imports, opening the database, the work, exit. The database
holds ``--memories`` memories. The last table lists the slowest imports of
``mnemosyne recall`` (``python -X importtime``), cumulative, to keep that path lean.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def timings(argv: list[str], runs: int, env: dict[str, str]) -> tuple[list[float], list[float]]:
    """Wall and CPU (user + system) milliseconds of each run. CPU time barely moves
    when other work shares the machine; wall time is what a caller waits."""
    walls, cpus = [], []
    for _ in range(runs):
        before = os.times()
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env)
        walls.append((time.perf_counter() - start) * 1000)
        after = os.times()
        cpus.append((after.children_user + after.children_system
                     - before.children_user - before.children_system) * 1000)
    return walls, cpus


def slowest_imports(argv: list[str], env: dict[str, str], top: int) -> list[tuple[int, str]]:
    result = subprocess.run([sys.executable, "-X", "importtime", *argv], capture_output=True, text=True,
                            env=env, check=True)
    rows = []
    for line in result.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, name = (part.strip() for part in line[len("import time:"):].split("|"))
        if "." not in name.strip():  # top-level packages only: their cost includes submodules
            rows.append((int(cumulative), name.strip()))
    return sorted(rows, reverse=True)[:top]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--memories", type=int, default=1000)
    args = parser.parse_args()

    from mnemosyne import Mnemosyne

    with tempfile.TemporaryDirectory() as folder:
        db = str(Path(folder) / "memories.db")
        with Mnemosyne(session_id="bench", db_path=db) as mem:
            mem.remember_many(f"event {i}: deploy step {i % 37} finished for service {i % 11}"
                              for i in range(args.memories))
        env = {**os.environ, "MNEMOSYNE_DB": db}
        cli = [sys.executable, "-m", "mnemosyne"]
        cases = [
            ("python -c pass (interpreter only)", [sys.executable, "-c", "pass"]),
            ("python -c 'import mnemosyne'", [sys.executable, "-c", "import mnemosyne"]),
            ("mnemosyne --help", [*cli, "--help"]),
            ("mnemosyne recall 'deploy step 5' -k 10", [*cli, "recall", "deploy step 5", "-k", "10",
                                                       "--session", "bench"]),
            ("mnemosyne recall ... --json", [*cli, "recall", "deploy step 5", "--json",
                                             "--session", "bench"]),
            ("mnemosyne remember 'x'", [*cli, "remember", "cold start probe", "--session", "bench"]),
            ("mnemosyne stats", [*cli, "stats"]),
        ]
        print(f"cold start, {args.runs} runs each, {args.memories} memories, {sys.version.split()[0]}")
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        print(f"{'command':<44} {'wall median':>11} {'wall p90':>9} {'wall min':>9} {'cpu median':>11}")
        for label, argv in cases:
            walls, cpus = timings(argv, args.runs, env)
            walls.sort()
            p90 = walls[min(len(walls) - 1, int(0.9 * len(walls)))]
            print(f"{label:<44} {statistics.median(walls):>9.1f}ms {p90:>7.1f}ms {walls[0]:>7.1f}ms "
                  f"{statistics.median(cpus):>9.1f}ms")

        print("\nslowest imports of `mnemosyne recall` (cumulative µs, top-level packages)")
        recall = ["-m", "mnemosyne", "recall", "deploy", "--session", "bench"]
        for micros, name in slowest_imports(recall, env, 8):
            print(f"{name:<30} {micros:>10}")


if __name__ == "__main__":
    main()
