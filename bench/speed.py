"""Recall latency and ingest rate on synthetic, reproducible corpora.

    python bench/speed.py                  # 10k and 100k memories
    python bench/speed.py --sizes 10000    # a quicker run

The corpus draws words from a Zipf-distributed vocabulary (like real text: a few
very common words, a long tail), 8-24 words a memory, from 20 sources (and one rare
one: every thousandth memory is the auditor's); queries are 3-6 words drawn the same
way, minus the 100 most common ones (as a stopword list would remove them). A query
naming only a source lists that source's memories: timed for a common source and
for the rare one. So is a query that 120 near copies answer, which recall searches
again, deeper. Retrieval-only timings use a deterministic
384-dimensional test embedder for the vectors, so they measure the index and
fusion, not the model. End-to-end timings embed the query with the bundled local
model over a corpus of the same kind embedded by that model. The local model's
ingest rate is measured on short English sentences (synthetic words split into many
word pieces, so they would understate it). MNEMOSYNE_THREADS sets the model's threads
(default 1).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from mnemosyne import Mnemosyne
from mnemosyne.embedders.base import normalise_rows
from mnemosyne.storage.sqlite import vector_index

VOCABULARY = 20_000
STOPWORDS = 100  # the most common ranks stand for stopwords
RARE_SOURCE = "auditor"
# Queries naming only a source: one that wrote 5% of the memories, one that wrote 0.1%.
LISTINGS = (("common source", "what did agent-3 say"), ("rare source", f"what did {RARE_SOURCE} say"))
# Five log lines sharing a rare word, each 24 times a step number apart (near copies:
# the step is no corpus word, so all copies of a line have one vector), and the query
# naming that word: they fill every signal's candidates, and recall searches again,
# deeper (``retrieval.ALIKE_DEEPER``).
CROWD_WORD = VOCABULARY - 1
CROWD = [{"content": f"w{CROWD_WORD} w{CROWD_WORD - 1 - step % 5} (step {step})", "scope": "global",
          "source": "terminal"} for step in range(120)]


class RandomProjectionEmbedder:
    """Deterministic 384-dim vectors from a text's words: cheap to make at 100k."""

    name, model, dimension = "bench-random", "zipf-v1-384", 384

    def __init__(self) -> None:
        self._words = np.random.default_rng(0).standard_normal((VOCABULARY, self.dimension)).astype(np.float32)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        # Words not of the corpus (those of a query naming a source) add nothing.
        rows = [self._words[[int(w[1:]) for w in text.split() if w[1:].isdigit()]].sum(axis=0) for text in texts]
        return normalise_rows(np.array(rows).reshape(len(texts), self.dimension))


def make_corpus(size: int, seed: int = 1) -> tuple[list[dict], list[str]]:
    rng = np.random.default_rng(seed)
    ranks = np.arange(1, VOCABULARY + 1)
    weights = 1.0 / ranks
    weights /= weights.sum()
    lengths = rng.integers(8, 25, size)
    words = rng.choice(VOCABULARY, size=int(lengths.sum()), p=weights)
    items, start = [], 0
    base = 1_700_000_000.0
    for index, length in enumerate(lengths):
        text = " ".join(f"w{w}" for w in words[start : start + length])
        start += length
        source = RARE_SOURCE if index % 1000 == 999 else f"agent-{index % 20}"
        items.append({"content": text, "created_at": base + index * 30.0, "scope": "global", "source": source})
    # Real queries lose their most common words to the stopword list; so do these.
    content_weights = weights.copy()
    content_weights[:STOPWORDS] = 0
    content_weights /= content_weights.sum()
    queries = [" ".join(f"w{w}" for w in rng.choice(VOCABULARY, size=rng.integers(3, 7), p=content_weights))
               for _ in range(300)]
    return items, queries


def timed(fn: Callable[[], object], repeat: int) -> list[float]:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def pct(samples: list[float], q: int) -> float:
    return statistics.quantiles(samples, n=100)[q - 1]


def ingest(db: Path, items: list[dict], embedder: object, batch: int = 1000) -> float:
    mem = Mnemosyne(session_id="bench", db_path=db, embedder=embedder)  # type: ignore[arg-type]
    start = time.perf_counter()
    for offset in range(0, len(items), batch):
        mem.remember_many(items[offset : offset + batch])
    rate = len(items) / (time.perf_counter() - start)
    mem.close()
    return rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--model-ingest", type=int, default=10_000,
                        help="memories to ingest with the local model (0 skips the local model)")
    args = parser.parse_args()

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes:
            items, queries = make_corpus(size)
            queries = queries[: args.queries]
            lexical_rate = ingest(Path(tmp) / f"lex-{size}.db", items, "none")
            db = Path(tmp) / f"vec-{size}.db"
            vector_rate = ingest(db, items, RandomProjectionEmbedder())
            mem = Mnemosyne(session_id="bench", db_path=db, embedder=RandomProjectionEmbedder())
            mem.recall(queries[0])  # loads the vector index once, as a long-running agent would
            it = iter(queries * 2)
            retrieval = timed(lambda mem=mem, it=it: mem.recall(next(it), top_k=10), len(queries))
            listings = [(label, timed(lambda mem=mem, query=query: mem.recall(query, top_k=10), 100))
                        for label, query in LISTINGS]
            mem.remember_many(CROWD)
            crowded = timed(lambda mem=mem: mem.recall(f"w{CROWD_WORD}", top_k=10), 100)
            mem.close()
            scan = "exact" if size <= vector_index.EXACT_UP_TO else "sign-bit shortlist, then exact"
            label = f"retrieval only (lexical + vectors [{scan}], fused)"
            rates = f"{lexical_rate:,.0f}/s", f"{vector_rate:,.0f}/s (test embedder)"
            rows.append((f"{size:,}", label, retrieval, *rates))
            rows.extend((f"{size:,}", f"a source's memories listed ({name})", samples, "", "")
                        for name, samples in listings)
            rows.append((f"{size:,}", "near copies fill the candidates (searched again, deeper)", crowded, "", ""))

        local = _local_model() if args.model_ingest > 0 else None
        if local is not None:
            # The same kind of corpus and queries as above, embedded by the real model.
            items, queries = make_corpus(args.model_ingest, seed=2)
            db = Path(tmp) / "local.db"
            ingest(db, items, local)
            mem = Mnemosyne(session_id="bench", db_path=db, embedder=local)
            mem.recall(queries[-1])
            it = iter(queries[: args.queries])
            end_to_end = timed(lambda: mem.recall(next(it), top_k=10), min(args.queries, len(queries)))
            mem.close()
            english = [{"content": sentence} for sentence in english_sentences(2_000)]
            model_rate = ingest(Path(tmp) / "english.db", english, local)

    print("| memories | recall | p50 | p95 | ingest, lexical only | ingest, with vectors |")
    print("|---|---|---|---|---|---|")
    for size, label, samples, lexical_rate, vector_rate in rows:
        print(f"| {size} | {label} | {pct(samples, 50):.1f} ms | {pct(samples, 95):.1f} ms | "
              f"{lexical_rate} | {vector_rate} |")
    if local is not None:
        print(f"| {args.model_ingest:,} | end to end (query embedded by the local model) | "
              f"{pct(end_to_end, 50):.1f} ms | {pct(end_to_end, 95):.1f} ms | | "
              f"{model_rate:,.0f}/s (local model, 15-word sentences, batches of 1000) |")


def english_sentences(count: int, seed: int = 3) -> list[str]:
    """Short agent-log sentences (about 15 words) from a fixed vocabulary."""
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(_ENGLISH, size=15)).capitalize() + "." for _ in range(count)]


_ENGLISH = """the team agreed to deploy the database backup after the customer meeting on friday
because latency on the main server was too high during the release review and the
design of the new dashboard needs another pass before the launch so we moved the
budget discussion and the onboarding feedback to next week while support fixed a bug
in the export pipeline that blocked the invoice report for two users""".split()


def _local_model() -> object | None:
    try:
        from mnemosyne.embedders.registry import from_spec

        return from_spec("local")
    except ImportError:
        print("(the local model is not installed: pip install 'mnemosyne-agent-memory[local]')")
        return None


if __name__ == "__main__":
    main()
