"""Retrieval quality on LoCoMo and LongMemEval-S: baselines and Mnemosyne, one table.

    python bench/retrieval.py --locomo ../shared/bench/locomo_dev.json \
                              --longmemeval ../shared/bench/longmemeval_s_dev100.json

Three retrievers over the same memories (one per dialog turn):
  bm25      plain SQLite FTS5 BM25 over the turn text, stopwords removed, OR query
  dense     embedding cosine only (the bundled all-MiniLM-L6-v2 unless --embedder)
  mnemosyne Mnemosyne.recall(): contextual lexical fields + dense, fused and adjusted

LoCoMo: one database per conversation, text "speaker: text", each question asked
of a fresh copy of it (recall counts what it returns, and past use is part of the
score: no question is ranked by the ones asked before it); Recall@5/@10 and MRR@10
over categories 1-4 (category 5, adversarial, reported apart).
LongMemEval-S: one fresh database per question, created_at from the haystack dates,
recall with now=question_date; turn recall_all@10 and session recall_all@5,
abstention questions excluded. No LLM anywhere.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import os
import shutil
import sqlite3
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from datasets import (  # noqa: E402
    LOCOMO_CATEGORIES,
    load_locomo,
    load_longmemeval,
    mrr_at_k,
    rank_sessions,
    recall_all_at_k,
    recall_at_k,
)
from mnemosyne import Mnemosyne  # noqa: E402
from mnemosyne.core.lexical import fts_query  # noqa: E402

Retriever = Callable[[str, int], list[str]]  # (query, k) -> ranked keys


class CachedEmbedder:
    """An embedder (the local model unless ``spec`` names another) with a text → vector
    cache, so every retriever embeds each text once.

    With ``path`` the cache also lives on disk (an ``.npz`` of text digests and vectors),
    so a later run embeds only texts it has not seen: LongMemEval-S's ~49k turns take
    about half an hour to embed on one thread, a cached run a minute or two.
    """

    # Unsaved vectors that trigger a save, so an interrupted run keeps most of its work.
    SAVE_EVERY = 5_000

    def __init__(self, path: str | None = None, spec: str = "local") -> None:
        from mnemosyne.embedders.registry import from_spec

        model = from_spec(spec)
        if model is None:
            raise SystemExit("--embedder none: use --lexical-only")
        self._model = model
        self.name, self.model, self.dimension = self._model.name, self._model.model, self._model.dimension
        self._cache: dict[bytes, np.ndarray] = {}
        self._path = Path(path) if path else None
        self._unsaved = 0
        if self._path is not None and self._path.exists():
            with np.load(self._path) as stored:
                self._cache.update(zip(stored["keys"].tolist(), stored["vectors"], strict=True))

    def _key(self, text: str) -> bytes:
        # The model id is part of the key: a cache made by another model never matches.
        return hashlib.sha1(f"{self.model}\0{text}".encode()).digest()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        keys = [self._key(t) for t in texts]
        missing = list(dict.fromkeys((k, t) for k, t in zip(keys, texts, strict=True) if k not in self._cache))
        if missing:
            vectors = self._model.embed([t for _, t in missing])
            self._cache.update(zip((k for k, _ in missing), vectors, strict=True))
            self._unsaved += len(missing)
            if self._unsaved >= self.SAVE_EVERY:
                self.save()
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([self._cache[k] for k in keys])

    def save(self) -> None:
        """Write the cache to its file (atomically), if it has one and anything is new."""
        if self._path is None or not self._unsaved:
            return
        partial = self._path.with_name(self._path.name + ".partial.npz")
        keys = np.array(list(self._cache), dtype="S20")
        vectors = np.stack(list(self._cache.values())).astype(np.float32)
        np.savez(partial, keys=keys, vectors=vectors)
        os.replace(partial, self._path)
        self._unsaved = 0


def bm25_retriever(keys: Sequence[str], texts: Sequence[str]) -> Retriever:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(text)")
    conn.executemany("INSERT INTO t (rowid, text) VALUES (?, ?)", enumerate(texts))

    def search(query: str, k: int) -> list[str]:
        expression = fts_query(query)
        if expression is None:
            return []
        rows = conn.execute("SELECT rowid FROM t WHERE t MATCH ? ORDER BY rank LIMIT ?", (expression, k))
        return [keys[i] for (i,) in rows]

    return search


def dense_retriever(keys: Sequence[str], texts: Sequence[str], embedder: CachedEmbedder) -> Retriever:
    matrix = embedder.embed(list(texts))

    def search(query: str, k: int) -> list[str]:
        scores = matrix @ embedder.embed([query])[0]
        return [keys[i] for i in np.argsort(-scores, kind="stable")[:k]]

    return search


def locomo(path: str, embedder: CachedEmbedder | None, workdir: Path) -> dict[str, dict[str, list[float]]]:
    """scores[retriever][metric@category] -> per-question values.

    Each question is asked of the conversation's memory as it was stored, not after
    the questions before it: a recall raises its results' access counts, and past
    use is part of the score, so one database asked every question in turn would
    rank each one by which questions happened to come first."""
    scores: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    model: CachedEmbedder | str = embedder if embedder is not None else "none"
    for conversation in load_locomo(path):
        keys = [turn.dia_id for turn in conversation.turns]
        texts = [f"{turn.speaker}: {turn.text}" for turn in conversation.turns]
        stored = workdir / f"{conversation.sample_id}.db"
        with Mnemosyne(session_id=conversation.sample_id, db_path=stored, embedder=model) as mem:
            mem.remember_many(
                {"content": text, "source": turn.speaker, "created_at": turn.created_at,
                 "metadata": {"dia_id": turn.dia_id}}
                for text, turn in zip(texts, conversation.turns, strict=True)
            )
        retrievers: dict[str, Retriever] = {"bm25": bm25_retriever(keys, texts)}
        if embedder is not None:
            retrievers["dense"] = dense_retriever(keys, texts, embedder)
        retrievers["mnemosyne"] = functools.partial(
            _recall_as_stored, stored, workdir / "asked.db", conversation.sample_id, model)
        for question in conversation.questions:
            group = "adversarial" if question.category == 5 else "overall"
            for name, retrieve in retrievers.items():
                ranked = retrieve(question.question, 10)
                for metric, value in (
                    ("R@5", recall_at_k(ranked, question.evidence, 5)),
                    ("R@10", recall_at_k(ranked, question.evidence, 10)),
                    ("MRR@10", mrr_at_k(ranked, question.evidence, 10)),
                ):
                    scores[name][f"{metric} {group}"].append(value)
                    if question.category != 5:
                        scores[name][f"{metric} {LOCOMO_CATEGORIES[question.category]}"].append(value)
    return scores


def _recall_as_stored(
    stored: Path, scratch: Path, session_id: str, model: CachedEmbedder | str, query: str, k: int
) -> list[str]:
    """Mnemosyne's top ``k`` for ``query``, from a fresh copy of the ``stored`` database
    (closed, so the file is whole; the copy's journal files go with the last copy)."""
    for leftover in (scratch, scratch.with_name(f"{scratch.name}-wal"), scratch.with_name(f"{scratch.name}-shm")):
        leftover.unlink(missing_ok=True)
    shutil.copyfile(stored, scratch)
    with Mnemosyne(session_id=session_id, db_path=scratch, embedder=model) as mem:
        return [r.metadata["dia_id"] for r in mem.recall(query, top_k=k)]


def longmemeval(path: str, embedder: CachedEmbedder | None, workdir: Path, limit: int | None):
    scores: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    questions = [q for q in load_longmemeval(path) if not q.question_id.endswith("_abs")][:limit]
    for number, question in enumerate(questions):
        keys, texts, sessions, items = [], [], {}, []
        for session in question.sessions:
            for turn in session.turns:
                key = f"{session.session_id}#{turn.index}"
                keys.append(key)
                texts.append(f"{turn.role}: {turn.content}")
                sessions[key] = session.session_id
                items.append({"content": texts[-1], "source": turn.role, "created_at": turn.created_at,
                              "metadata": {"key": key}, "scope": "global"})
        evidence_turns = {f"{s.session_id}#{t.index}" for s in question.sessions for t in s.turns if t.has_answer}
        mem = Mnemosyne(session_id="bench", db_path=workdir / f"lme-{number}.db",
                        embedder=embedder if embedder is not None else "none")
        # Each haystack session is its own agent session; its turns are shared (global).
        by_session: dict[str, list[dict]] = defaultdict(list)
        for item in items:
            by_session[sessions[item["metadata"]["key"]]].append(item)
        for session_id, session_items in by_session.items():
            writer = Mnemosyne(session_id=session_id, db_path=mem.db_path,
                               embedder=embedder if embedder is not None else "none")
            writer.remember_many(session_items)
            writer.close()
        retrievers: dict[str, Retriever] = {"bm25": bm25_retriever(keys, texts)}
        if embedder is not None:
            retrievers["dense"] = dense_retriever(keys, texts, embedder)
        retrievers["mnemosyne"] = lambda q, k, m=mem, now=question.question_date: [
            r.metadata["key"] for r in m.recall(q, top_k=k, now=now)]
        for name, retrieve in retrievers.items():
            ranked = retrieve(question.question, 50)
            session_ranking = rank_sessions(sessions[key] for key in ranked)
            if evidence_turns:
                scores[name]["turn recall_all@10"].append(recall_all_at_k(ranked, evidence_turns, 10))
            scores[name]["session recall_all@5"].append(
                recall_all_at_k(session_ranking, question.answer_session_ids, 5))
        mem.close()
    return scores


def print_table(title: str, scores: dict[str, dict[str, list[float]]], columns: list[str]) -> None:
    print(f"\n{title}\n")
    print("| retriever | " + " | ".join(columns) + " |")
    print("|---|" + "---|" * len(columns))
    for name, metrics in scores.items():
        cells = [f"{np.mean(metrics[c]):.3f}" if metrics.get(c) else "" for c in columns]
        print(f"| {name} | " + " | ".join(cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--locomo", help="path to locomo_dev.json")
    parser.add_argument("--longmemeval", help="path to longmemeval_s_dev100.json")
    parser.add_argument("--lme-limit", type=int, help="only the first N LongMemEval questions")
    parser.add_argument("--lexical-only", action="store_true", help="no embedding model (bm25 + mnemosyne)")
    parser.add_argument("--embedder", default="local", metavar="SPEC",
                        help="the model for dense and mnemosyne, e.g. 'sentence-transformers:all-mpnet-base-v2' "
                             "(default: local, the bundled all-MiniLM-L6-v2)")
    parser.add_argument("--embedding-cache", metavar="FILE",
                        help="keep embeddings in this .npz file across runs (created if missing)")
    args = parser.parse_args()
    embedder = None if args.lexical_only else CachedEmbedder(args.embedding_cache, args.embedder)
    with tempfile.TemporaryDirectory() as tmp:
        if args.locomo:
            start = time.perf_counter()
            scores = locomo(args.locomo, embedder, Path(tmp))
            categories = [LOCOMO_CATEGORIES[c] for c in (1, 2, 3, 4)]
            print_table(f"LoCoMo, categories 1-4 ({time.perf_counter() - start:.0f} s)", scores,
                        ["R@5 overall", "R@10 overall", "MRR@10 overall"])
            print_table("LoCoMo R@10 per category", scores,
                        [f"R@10 {c}" for c in categories] + ["R@10 adversarial"])
            if embedder is not None:
                embedder.save()
        if args.longmemeval:
            start = time.perf_counter()
            scores = longmemeval(args.longmemeval, embedder, Path(tmp), args.lme_limit)
            count = len(next(iter(scores.values()))["session recall_all@5"])
            print_table(f"LongMemEval-S, {count} questions ({time.perf_counter() - start:.0f} s)", scores,
                        ["turn recall_all@10", "session recall_all@5"])
            if embedder is not None:
                embedder.save()


if __name__ == "__main__":
    main()
