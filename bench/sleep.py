"""Sleep consolidation on a long-running agent log built from LoCoMo.

    python bench/sleep.py /work/shared/bench/locomo_dev.json --scale-to 10000

Each LoCoMo conversation becomes one long session (one memory per turn,
``"speaker: text"``, ``created_at`` from the session dates). Every tenth turn is
re-stated one or two sessions later with a small wording change, as agents do.
Then: recall quality before sleep, ``sleep()``, recall quality after, a second
``sleep()``; and, separately, the time to sleep over ``--scale-to`` memories.

Recall@10 (questions of categories 1-4, evidence normalised as in the data README):
* ``R@10``: the issue's measure; a returned memory covers its own turn, and a
  summary or canonical memory covers every memory it links to (transitively).
* ``R@10 quoted``: stricter; a summary covers only the sources it actually quotes.
* ``R@10 incl.``: ``recall(..., include_consolidated=True)`` after sleep.
A restated copy of a turn covers that turn. The data is read from the given path,
never copied into the repository (LoCoMo is CC BY-NC 4.0).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sqlite3
import statistics
import tempfile
import time
from collections import defaultdict
from datetime import datetime, timedelta, timezone
from pathlib import Path

from mnemosyne import Mnemosyne
from mnemosyne.core.consolidation import SleepPolicy

_DATE = re.compile(r"(\d{1,2}):(\d{2})\s*([ap]m) on (\d{1,2}) (\w+),? (\d{4})", re.IGNORECASE)
_MONTHS = {m: i for i, m in enumerate(
    "january february march april may june july august september october november december".split(), 1)}
_SYNONYMS = {"really": "truly", "great": "awesome", "good": "nice", "happy": "glad", "think": "believe",
             "amazing": "incredible", "love": "adore", "lot": "ton", "big": "huge", "so": "very"}


def parse_date(text: str) -> datetime:
    hour, minute, ampm, day, month, year = _DATE.search(text).groups()  # type: ignore[union-attr]
    hour = int(hour) % 12 + (12 if ampm.lower() == "pm" else 0)
    return datetime(int(year), _MONTHS[month.lower()], int(day), hour, int(minute), tzinfo=timezone.utc)


def normalise_evidence(raw: list[str], known: set[str]) -> set[str]:
    out = set()
    for item in raw:
        for part in re.split(r"[;\s]+", item):
            match = re.match(r"D:?(\d+):+0*(\d+)$", part.strip())
            if match:
                dia = f"D{int(match[1])}:{int(match[2])}"
                if dia in known:
                    out.add(dia)
    return out


def restate(text: str, rng: random.Random) -> str:
    """A small wording change: a synonym, a lead-in, or different punctuation."""
    words = text.split(" ")
    swappable = [i for i, w in enumerate(words) if w.lower().strip(",.!?") in _SYNONYMS]
    choice = rng.random()
    if swappable and choice < 0.5:
        i = rng.choice(swappable)
        bare = words[i].lower().strip(",.!?")
        words[i] = words[i].lower().replace(bare, _SYNONYMS[bare])
        return " ".join(words)
    if choice < 0.8:
        return "As I said, " + text[:1].lower() + text[1:]
    # Emphasis, not another kind of sentence: a question restated stays a question.
    return text.rstrip(".!?") + ("??" if text.rstrip().endswith("?") else "!!")


def build_log(sample: dict, rng: random.Random, session: str) -> tuple[list[dict], dict, list]:
    """Memories for one conversation: turns plus restatements, in time order."""
    conv = sample["conversation"]
    numbers = sorted(int(k.split("_")[1]) for k, v in conv.items()
                     if re.fullmatch(r"session_\d+", k) and isinstance(v, list))
    sessions = [(parse_date(conv[f"session_{n}_date_time"]), conv[f"session_{n}"]) for n in numbers]
    items: list[dict] = []
    pending: dict[int, list[dict]] = defaultdict(list)  # session index -> restatements to insert
    count = 0
    for s_index, (start, turns) in enumerate(sessions):
        extra = pending.pop(s_index, [])
        slots = sorted(rng.randrange(len(turns) + 1) for _ in extra)
        inserted = 0
        for t_index, turn in enumerate(turns + [None]):
            while inserted < len(extra) and slots[inserted] == t_index:
                items.append({**extra[inserted], "at": start})
                inserted += 1
            if turn is None:
                break
            text = f"{turn['speaker']}: {turn['text']}"
            items.append({"content": text, "dia": turn["dia_id"], "at": start, "copy": False})
            if count % 10 == 0:
                later = min(s_index + rng.choice((1, 2)), len(sessions) - 1)
                copy = f"{turn['speaker']}: {restate(turn['text'], rng)}"
                pending[later if later > s_index else s_index].append(
                    {"content": copy, "dia": turn["dia_id"], "copy": True})
            count += 1
        for leftover in pending.pop(s_index, []):  # the last session's own restatements
            items.append({**leftover, "at": start})
    # Turns within a session are 30 s apart; sessions are days apart.
    for offset, item in enumerate(items):
        item["created_at"] = item.pop("at") + timedelta(seconds=30 * offset)
        item["session"] = session
    known = {t["dia_id"] for _, turns in sessions for t in turns}
    questions = [(q["question"], normalise_evidence([str(e) for e in q.get("evidence", [])], known))
                 for q in sample["qa"] if q.get("category") in (1, 2, 3, 4)]
    return items, {}, [(q, ev) for q, ev in questions if ev]


def ingest(mem: Mnemosyne, items: list[dict]) -> dict[str, str]:
    ids = mem.remember_many([{"content": i["content"], "created_at": i["created_at"]} for i in items])
    return {memory_id: item["dia"] for memory_id, item in zip(ids, items, strict=True)}


def coverage(db: Path, dia_of: dict[str, str]) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """memory id -> turns it covers (via links), and the stricter quoted-only version."""
    with sqlite3.connect(db) as conn:
        links = conn.execute("SELECT src_id, dst_id, kind FROM memory_links").fetchall()
        contents = dict(conn.execute("SELECT id, content FROM memories"))
    children: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for src, dst, kind in links:
        children[src].append((dst, kind))

    def walk(memory_id: str, quoted_only: bool) -> set[str]:
        out, stack, seen = set(), [memory_id], set()
        while stack:
            node = stack.pop()
            if node in seen:
                continue
            seen.add(node)
            if node in dia_of:
                out.add(dia_of[node])
            for child, kind in children.get(node, ()):
                if quoted_only and kind == "summarises" and not _quoted(contents[child], contents[node]):
                    continue
                stack.append(child)
        return out

    full = {m: walk(m, False) for m in contents}
    quoted = {m: walk(m, True) for m in contents}
    return full, quoted


def false_merges(db: Path, dia_of: dict[str, str]) -> int:
    """Merges of two memories that are not the same turn (or its restatement)."""
    with sqlite3.connect(db) as conn:
        pairs = conn.execute("SELECT src_id, dst_id FROM memory_links WHERE kind = 'merges'").fetchall()
    return sum(dia_of[src] != dia_of[dst] for src, dst in pairs)


def _quoted(source: str, summary: str) -> bool:
    return any(len(s) > 12 and s in summary for s in re.split(r"(?<=[.!?])\s+", source))


def recall_at_10(mem: Mnemosyne, questions, covers: dict[str, set[str]], **kw) -> float:
    scores = []
    for question, evidence in questions:
        got: set[str] = set()
        for m in mem.recall(question, top_k=10, **kw):
            got |= covers.get(m.id, set())
        scores.append(len(got & evidence) / len(evidence))
    return statistics.fmean(scores)


def quality(samples: list[dict], workdir: Path, seed: int, policy: SleepPolicy) -> None:
    header = ("conversation", "memories", "restated", "active before", "active after", "reduction",
              "R@10 before", "R@10 after", "R@10 quoted", "R@10 incl.", "dups merged", "false merges",
              "sleep s", "2nd sleep rows")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    totals = defaultdict(list)
    for sample in samples:
        rng = random.Random(f"{seed}-{sample['sample_id']}")
        items, _, questions = build_log(sample, rng, sample["sample_id"])
        db = workdir / f"{sample['sample_id']}.db"
        with Mnemosyne(session_id=sample["sample_id"], db_path=db, sleep_policy=policy) as mem:
            dia_of = ingest(mem, items)
            before_cov = {memory_id: {dia} for memory_id, dia in dia_of.items()}
            r_before = recall_at_10(mem, questions, before_cov)
            started = time.perf_counter()
            report = mem.sleep()
            seconds = time.perf_counter() - started
            # Straight away: the recalls below are new data (they reinforce what they hit).
            second = mem.sleep()
            full, quoted = coverage(db, dia_of)
            r_after = recall_at_10(mem, questions, full)
            r_quoted = recall_at_10(mem, questions, quoted)
            r_incl = recall_at_10(mem, questions, full, include_consolidated=True)
            copies = sum(1 for i in items if i["copy"])
            row = (sample["sample_id"], len(items), copies, report.active_before, report.active_after,
                   1 - report.active_after / report.active_before, r_before, r_after, r_quoted, r_incl,
                   report.merged, false_merges(db, dia_of), seconds, second.changed_rows)
        for key, value in zip(header, row, strict=True):
            totals[key].append(value)
        print("| " + " | ".join(_fmt(v) for v in row) + " |")
    summed = ("memories", "restated", "active before", "active after", "dups merged", "false merges",
              "2nd sleep rows")
    mean = ["mean / total"] + [
        str(sum(int(v) for v in totals[k])) if k in summed
        else _fmt(statistics.fmean(float(v) for v in totals[k])) for k in header[1:]
    ]
    print("| " + " | ".join(mean) + " |")


def speed(samples: list[dict], workdir: Path, target: int, seed: int, policy: SleepPolicy,
          distinct: bool, header: bool, notes: list[str]) -> None:
    rng = random.Random(seed)
    items: list[dict] = []
    copy = 0
    while len(items) < target:
        for sample in samples:
            log, _, _ = build_log(sample, rng, f"{sample['sample_id']}-{copy}")
            if copy and distinct:
                # Later copies get their own words (same lengths and structure), so the
                # timing run is not just cross-session duplicates being merged.
                mark = "qxzjvkwy"[copy % 8] * (1 + copy // 8)
                for item in log:
                    item["content"] = re.sub(r"\b(\w{4,})\b", rf"\1{mark}", item["content"])
            items.extend(log)
        copy += 1
    items = items[:target]
    db = workdir / f"speed-{distinct}.db"
    by_session: dict[str, list[dict]] = defaultdict(list)
    for item in items:
        by_session[item["session"]].append(item)
    for session, group in by_session.items():
        with Mnemosyne(session_id=session, db_path=db) as mem:
            ingest(mem, group)
    with Mnemosyne(session_id="bench", db_path=db, sleep_policy=policy) as mem:
        started = time.perf_counter()
        report = mem.sleep()
        first = time.perf_counter() - started
        started = time.perf_counter()
        second = mem.sleep()
        again = time.perf_counter() - started
        stats = mem.get_stats()
    if header:
        print("| workload | memories | sessions | sleep s | 2nd sleep s | active before | active after "
              "| merged | summaries | 2nd sleep rows |")
        print("|---|---|---|---|---|---|---|---|---|---|")
    workload = "distinct copies" if distinct else "repeated copies (cross-session duplicates)"
    print(f"| {workload} | {len(items)} | {len(by_session)} | {first:.2f} | {again:.2f} "
          f"| {report.active_before} | {report.active_after} | {report.merged} | {report.summaries} "
          f"| {second.changed_rows} |")
    notes.append(f"{workload}: stats after: by_status={stats.by_status} by_kind={stats.by_kind} "
                 f"last_sleep_at={stats.last_sleep_at:%Y-%m-%d %H:%M:%S}")


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("locomo", type=Path, help="path to locomo_dev.json")
    parser.add_argument("--scale-to", type=int, default=10_000, help="memories for the timing run (0: skip)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--policy", type=json.loads, default={},
                        help='SleepPolicy overrides as JSON, e.g. \'{"consolidate": "all"}\'')
    args = parser.parse_args()
    policy = SleepPolicy(**args.policy)
    print(f"policy: {args.policy or 'defaults'}\n")
    samples = json.loads(args.locomo.read_text())
    with tempfile.TemporaryDirectory() as tmp:
        quality(samples, Path(tmp), args.seed, policy)
        if args.scale_to:
            print()
            notes: list[str] = []
            for distinct in (True, False):
                speed(samples, Path(tmp), args.scale_to, args.seed, policy, distinct, distinct, notes)
            print("\n" + "\n".join(notes))


if __name__ == "__main__":
    main()
