"""Lexical remember/recall timings on a synthetic database.

    python bench/speed_lexical.py --memories 10000 --queries 200

Prints ingest rates (one remember per call, and remember_many batches) and recall
latency percentiles. The corpus is reproducible (seeded), built from a fixed vocabulary
so queries hit realistic posting-list sizes.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

from mnemosyne import Mnemosyne

TOPICS = ("deploy", "database", "design", "invoice", "customer", "meeting", "release", "bug",
          "font", "palette", "budget", "schedule", "server", "backup", "latency", "review")
WORDS = ("the", "team", "agreed", "to", "move", "next", "week", "after", "checking", "with",
         "ops", "and", "legal", "because", "numbers", "looked", "wrong", "fixed", "shipped", "blocked")


def sentence(rng: random.Random) -> str:
    words = [rng.choice(TOPICS) for _ in range(3)] + [rng.choice(WORDS) for _ in range(10)]
    rng.shuffle(words)
    return " ".join(words) + f" #{rng.randrange(10**6)}"


def percentile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q) - 1] if len(values) > 1 else values[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--single", type=int, default=1_000, help="how many single remember() calls to time")
    args = parser.parse_args()
    rng = random.Random(7)

    with tempfile.TemporaryDirectory() as tmp:
        mem = Mnemosyne(session_id="bench", db_path=Path(tmp) / "bench.db", embedder="none")
        start = time.perf_counter()
        for _ in range(args.single):
            mem.remember(sentence(rng))
        single_rate = args.single / (time.perf_counter() - start)

        remaining = args.memories - args.single
        start = time.perf_counter()
        for offset in range(0, remaining, 1_000):
            mem.remember_many([sentence(rng) for _ in range(min(1_000, remaining - offset))])
        batch_rate = remaining / (time.perf_counter() - start)

        latencies = []
        for _ in range(args.queries):
            query = " ".join(rng.sample(TOPICS, 2) + rng.sample(WORDS, 2))
            start = time.perf_counter()
            mem.recall(query, top_k=10)
            latencies.append((time.perf_counter() - start) * 1000)
        stats = mem.get_stats()
        mem.close()

    print("| memories | remember (1/call) | remember_many (1000/batch) | recall p50 | recall p95 |")
    print("|---|---|---|---|---|")
    print(f"| {stats.total:,} | {single_rate:,.0f}/s | {batch_rate:,.0f}/s | "
          f"{percentile(latencies, 50):.2f} ms | {percentile(latencies, 95):.2f} ms |")


if __name__ == "__main__":
    main()
