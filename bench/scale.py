"""Recall quality and latency in one large memory: every LongMemEval haystack pooled.

    python bench/scale.py --longmemeval ../shared/bench/longmemeval_s_dev100.json
    python bench/scale.py --longmemeval ... --embedding-cache /tmp/lme.npz   # with the local model

``retrieval.py`` asks each LongMemEval question against its own haystack of ~500
turns. Here every distinct haystack session of the file goes into one database
(about 46,500 turns), and each question is asked against all of it: the other
questions' haystacks are distractors, as in an agent's memory after months.

Past ``COMMON_TERMS_FROM`` memories, lexical search finds its candidates by a
query's rarest terms only, up to ``POSTINGS_BUDGET`` index postings, and lets the
common terms score just those (see ``mnemosyne.core.lexical.fts_queries``): that
bounds its cost. This measures what the bound costs in recall, for several budgets
(0 means no budget: every term finds candidates). CPU time per recall is reported
because it does not depend on what else the machine is running.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from datasets import load_longmemeval, recall_all_at_k, recall_at_k  # noqa: E402
from mnemosyne import Mnemosyne  # noqa: E402
from mnemosyne.core import lexical  # noqa: E402
from retrieval import CachedEmbedder  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--longmemeval", required=True, help="path to longmemeval_s_dev100.json")
    parser.add_argument("--budgets", type=int, nargs="+", default=[lexical.POSTINGS_BUDGET, 5_000, 0])
    parser.add_argument("--embedding-cache", metavar="FILE",
                        help="use the local model, with vectors cached in FILE (without: lexical only)")
    args = parser.parse_args()

    questions = [q for q in load_longmemeval(args.longmemeval) if not q.question_id.endswith("_abs")]
    sessions = {s.session_id: s for q in questions for s in q.sessions}
    turns = sum(len(session.turns) for session in sessions.values())
    embedder = CachedEmbedder(args.embedding_cache) if args.embedding_cache else None
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "pooled.db"
        # Each haystack session is its own agent session, its turns shared (global),
        # as in retrieval.py. Written as one session they would interleave: sessions
        # of different questions share timestamps, and episode windows would mix them.
        for session in sorted((s for s in sessions.values() if s.turns), key=lambda s: s.turns[0].created_at):
            with Mnemosyne(session_id=session.session_id, db_path=db, embedder=embedder or "none") as writer:
                writer.remember_many(
                    {"content": f"{turn.role}: {turn.content}", "source": turn.role, "created_at": turn.created_at,
                     "metadata": {"key": f"{session.session_id}#{turn.index}"}, "scope": "global"}
                    for turn in session.turns
                )
        mem = Mnemosyne(session_id="bench", db_path=db, embedder=embedder or "none")
        if embedder is not None:
            embedder.save()
        print(f"{turns:,} turns from {len(sessions):,} sessions, {len(questions)} questions, "
              f"{'lexical + local model' if embedder else 'lexical only'}\n")
        print("| postings budget | turn recall@10 | turn recall_all@10 | CPU per recall, p50 | p95 |")
        print("|---|---|---|---|---|")
        for budget in args.budgets:
            lexical.POSTINGS_BUDGET = budget or sys.maxsize
            recall, recall_all, cpu = [], [], []
            for question in questions:
                evidence = {f"{s.session_id}#{t.index}" for s in question.sessions for t in s.turns if t.has_answer}
                start = time.process_time()
                found = [m.metadata["key"] for m in mem.recall(question.question, top_k=10, now=question.question_date)]
                cpu.append((time.process_time() - start) * 1000)
                if evidence:
                    recall.append(recall_at_k(found, evidence, 10))
                    recall_all.append(recall_all_at_k(found, evidence, 10))
            print(f"| {budget or 'none'} | {statistics.mean(recall):.3f} | {statistics.mean(recall_all):.3f} | "
                  f"{statistics.median(cpu):.1f} ms | {statistics.quantiles(cpu, n=20)[18]:.1f} ms |")
        mem.close()


if __name__ == "__main__":
    main()
