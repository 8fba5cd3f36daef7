"""One pasted document among short events: what it costs, and what it costs the
memories stored and asked beside it.

    python bench/large_memory.py                      # documents of 0.1, 1 and 5 MB
    python bench/large_memory.py --embedder none      # lexical only

A session of 50 short notes, then a document of varied synthetic sentences, then 5
more notes a minute apart (the document lies in their context windows), all 40 days
old so that sleep closes their episode. Reported for each size of document: its
``remember``; the mean ``remember`` of the notes after it; a recall that returns it
and one that does not; a ``sleep``; and the database's size on disk.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from mnemosyne import Mnemosyne

WORDS = ("alpha budget client deploy engine figure growth hiring invoice journal kernel ledger migrate "
         "network office payment quarter revenue server ticket update vendor window yearly").split()
DAY = 86_400.0


def document(chars: int, seed: int = 1) -> str:
    """Sentences of 6-18 words and a number each, about ``chars`` characters."""
    rng = random.Random(seed)
    sentences, size = [], 0
    while size < chars:
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 18)))
        sentence = f"{words.capitalize()} {rng.randint(1, 999)}."
        sentences.append(sentence)
        size += len(sentence) + 1
    return " ".join(sentences)


def seconds(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def measure(megabytes: float, embedder: str) -> dict[str, float]:
    start = time.time() - 40 * DAY
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "m.db"
        with Mnemosyne(session_id="bench", db_path=db, embedder=embedder) as mem:
            mem.remember_many({"content": f"Note {i}: the team met about topic {i} and agreed on next steps.",
                               "created_at": start + i} for i in range(50))
            text = document(int(megabytes * 1_000_000))
            row = {"remember": seconds(lambda: mem.remember(text, created_at=start + 60))}
            after = [seconds(lambda i=i: mem.remember(f"Later note {i} about the office move.",
                                                      created_at=start + 120 + 60 * i)) for i in range(5)]
            row["next remember"] = sum(after) / len(after)
            row["recall, returns it"] = seconds(lambda: mem.recall("vendor invoice payment quarter"))
            row["recall, does not"] = seconds(lambda: mem.recall("what did we agree about topic 7"))
            row["sleep"] = seconds(mem.sleep)
        row["database MB"] = sum(f.stat().st_size for f in Path(tmp).glob("m.db*")) / 1e6
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=float, nargs="+", default=[0.1, 1.0, 5.0], help="document sizes in MB")
    parser.add_argument("--embedder", default="local", help="embedder spec (default: local, the bundled model)")
    args = parser.parse_args()
    rows = {size: measure(size, args.embedder) for size in args.sizes}
    columns = list(next(iter(rows.values())))
    print(f"\nOne document among 55 short notes ({args.embedder}); times in seconds\n")
    print("| document MB | " + " | ".join(columns) + " |")
    print("|---" * (len(columns) + 1) + "|")
    for size, row in rows.items():
        print(f"| {size:g} | " + " | ".join(f"{row[c]:.3f}" if c != "database MB" else f"{row[c]:.1f}"
                                           for c in columns) + " |")


if __name__ == "__main__":
    main()
