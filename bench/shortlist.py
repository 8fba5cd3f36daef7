"""How much of the exact nearest-neighbour top-k the sign-bit shortlist keeps, on real vectors.

    python bench/shortlist.py --longmemeval ../shared/bench/longmemeval_s_dev100.json
    python bench/shortlist.py --longmemeval ... --cache /tmp/lme-vectors.npz   # embed once

Past ``EXACT_UP_TO`` vectors the index shortlists by sign bits and scores only the
shortlist exactly (see ``mnemosyne.storage.sqlite.vector_index``). Synthetic vectors
say little about how well sign bits follow a real model's angles, so this embeds
the sentences of the LongMemEval haystacks with the bundled model (about 10 minutes
for 100k on 2 cores; ``--cache`` keeps them), stores them in a real database, and
searches it with the benchmark's questions, shortlist against exact scan.
"""

from __future__ import annotations

import argparse
import re
import sqlite3
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from datasets import load_longmemeval  # noqa: E402
from mnemosyne import Mnemosyne  # noqa: E402
from mnemosyne.storage.base import Filters  # noqa: E402
from mnemosyne.storage.sqlite import vector_index  # noqa: E402


class Precomputed:
    """Serves vectors already computed for these texts."""

    name, model = "bench-precomputed", "all-MiniLM-L6-v2"

    def __init__(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        self.dimension = vectors.shape[1]
        self._rows = {text: row for row, text in enumerate(texts)}
        self._vectors = vectors

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._vectors[[self._rows[t] for t in texts]]


def sentences(path: str, size: int) -> tuple[list[str], list[str]]:
    """Up to ``size`` distinct haystack sentences, and the questions."""
    questions = load_longmemeval(path)
    texts = {
        sentence[:400]
        for q in questions for session in q.sessions for turn in session.turns
        for sentence in re.split(r"(?<=[.!?])\s+", turn.content) if len(sentence) > 20
    }
    return sorted(texts)[:size], [q.question for q in questions]


def embedded(texts: list[str], questions: list[str], cache: Path | None) -> tuple[np.ndarray, np.ndarray]:
    if cache is not None and cache.exists():
        saved = np.load(cache)
        return saved["texts"], saved["questions"]
    from mnemosyne.embedders.local import LocalEmbedder

    model = LocalEmbedder()
    vectors = np.concatenate([model.embed(texts[i : i + 512]) for i in range(0, len(texts), 512)])
    asked = model.embed(questions)
    if cache is not None:
        np.savez(cache, texts=vectors, questions=asked)
    return vectors, asked


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--longmemeval", required=True, help="path to longmemeval_s_dev100.json")
    parser.add_argument("--size", type=int, default=100_000, help="sentences to index")
    parser.add_argument("--cache", type=Path, help="an .npz file keeping the vectors between runs")
    args = parser.parse_args()

    texts, questions = sentences(args.longmemeval, args.size)
    vectors, asked = embedded(texts, questions, args.cache)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "shortlist.db"
        with Mnemosyne(session_id="bench", db_path=db, embedder=Precomputed(texts, vectors)) as mem:
            for start in range(0, len(texts), 5_000):
                mem.remember_many([{"content": t} for t in texts[start : start + 5_000]])
        conn = sqlite3.connect(db)
        conn.row_factory = sqlite3.Row
        index = vector_index.VectorIndex(vectors.shape[1])
        index.sync(conn)
        conn.close()

    filters = Filters(viewer_session="bench")
    print(f"{len(index):,} vectors, {len(asked)} questions; shortlist of "
          f"max({vector_index.SHORTLIST_MIN}, {vector_index.SHORTLIST_PER_RESULT} x k)")
    print("| k | share of the exact top k kept (mean) | worst question |")
    print("|---|---|---|")
    for k in (10, 50):
        shortlisted = [{seq for seq, _ in index.search(q, filters, k)} for q in asked]
        exact_up_to = vector_index.EXACT_UP_TO
        vector_index.EXACT_UP_TO = len(index)  # the exact scan, for reference
        exact = [{seq for seq, _ in index.search(q, filters, k)} for q in asked]
        vector_index.EXACT_UP_TO = exact_up_to
        kept = [len(s & e) / k for s, e in zip(shortlisted, exact, strict=True)]
        print(f"| {k} | {np.mean(kept):.3f} | {min(kept):.2f} |")


if __name__ == "__main__":
    main()
