"""Loaders and retrieval metrics for the Mnemosyne recall benchmarks.

Two datasets are supported:

* **LoCoMo** (Maharana et al., 2024), licensed **CC BY-NC 4.0**: long multi-session
  conversations between two speakers with question/answer pairs whose evidence
  points at dialog turns (``dia_id``).
* **LongMemEval-S** (Wu et al., 2024), licensed MIT: one haystack of chat sessions
  per question, turns flagged ``has_answer``.

The data is never shipped with this repository: callers pass the path of the JSON
file (for example ``/work/shared/bench/locomo_dev.json``) to the loaders. The
module depends on the standard library only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from os import PathLike
from pathlib import Path

__all__ = [
    "LocomoTurn",
    "LocomoQuestion",
    "LocomoConversation",
    "LongMemEvalTurn",
    "LongMemEvalSession",
    "LongMemEvalQuestion",
    "LOCOMO_CATEGORIES",
    "load_locomo",
    "load_longmemeval",
    "normalise_evidence",
    "parse_locomo_datetime",
    "parse_longmemeval_datetime",
    "recall_at_k",
    "mrr_at_k",
    "recall_all_at_k",
    "rank_sessions",
]

StrPath = str | PathLike[str]

#: LoCoMo question categories. Category 5 (adversarial) has no answer in the
#: conversation and is reported separately from recall metrics.
LOCOMO_CATEGORIES: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}

# Spacing between consecutive turns of one session, so ``created_at`` keeps order.
TURN_SPACING = timedelta(seconds=1)


# --------------------------------------------------------------------------- LoCoMo


@dataclass(frozen=True, slots=True)
class LocomoTurn:
    """One dialog turn of a LoCoMo conversation."""

    dia_id: str  # "D<session>:<turn>", unique within a conversation
    session: int  # session number N of ``session_N``
    index: int  # position of the turn within its session, from 0
    speaker: str
    text: str
    created_at: datetime  # session start + index * TURN_SPACING, UTC
    blip_caption: str | None = None  # image description, when the turn shares an image

    @property
    def memory_text(self) -> str:
        """Text stored as a memory under the benchmark protocol: ``"speaker: text"``."""
        return f"{self.speaker}: {self.text}"


@dataclass(frozen=True, slots=True)
class LocomoQuestion:
    """A LoCoMo question with its normalised evidence (dia_ids of existing turns)."""

    question: str
    answer: str
    category: int
    evidence: tuple[str, ...]

    @property
    def category_name(self) -> str:
        return LOCOMO_CATEGORIES.get(self.category, str(self.category))

    @property
    def is_adversarial(self) -> bool:
        return self.category == 5


@dataclass(slots=True)
class LocomoConversation:
    """A LoCoMo sample: turns in chronological order and its questions."""

    sample_id: str
    speaker_a: str
    speaker_b: str
    turns: list[LocomoTurn]
    questions: list[LocomoQuestion]
    session_dates: dict[int, datetime] = field(default_factory=dict)

    def turn_by_id(self) -> dict[str, LocomoTurn]:
        return {t.dia_id: t for t in self.turns}


_LOCOMO_DT = re.compile(
    r"^\s*(\d{1,2}):(\d{2})\s*([ap]\.?m\.?)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})\s*$",
    re.IGNORECASE,
)
_MONTHS = {
    m: i
    for i, names in enumerate(
        [
            ("jan", "january"),
            ("feb", "february"),
            ("mar", "march"),
            ("apr", "april"),
            ("may",),
            ("jun", "june"),
            ("jul", "july"),
            ("aug", "august"),
            ("sep", "sept", "september"),
            ("oct", "october"),
            ("nov", "november"),
            ("dec", "december"),
        ],
        start=1,
    )
    for m in names
}


def parse_locomo_datetime(value: str) -> datetime:
    """Parse a LoCoMo session date such as ``"1:56 pm on 8 May, 2023"`` as UTC."""
    m = _LOCOMO_DT.match(value)
    if not m:
        raise ValueError(f"unrecognised LoCoMo date: {value!r}")
    hour, minute, ampm, day, month_name, year = m.groups()
    month = _MONTHS.get(month_name.lower())
    if month is None:
        raise ValueError(f"unrecognised month in LoCoMo date: {value!r}")
    h = int(hour) % 12
    if ampm.lower().startswith("p"):
        h += 12
    return datetime(int(year), month, int(day), h, int(minute), tzinfo=timezone.utc)


_DIA_ID = re.compile(r"^D:?(\d+):+(\d+)$")


def normalise_evidence(raw: Iterable[str], known_ids: Iterable[str] | None = None) -> tuple[str, ...]:
    """Normalise LoCoMo evidence strings into canonical ``D<s>:<t>`` ids.

    Splits on ``;``, ``,`` and whitespace, strips extra colons (``"D:11:26"``), drops
    leading zeros (``"D30:05"`` -> ``"D30:5"``), removes duplicates (keeping order),
    and, when ``known_ids`` is given, drops ids that match no turn.
    """
    known = set(known_ids) if known_ids is not None else None
    out: list[str] = []
    for item in raw:
        for piece in re.split(r"[;,\s]+", str(item)):
            m = _DIA_ID.match(piece.strip())
            if not m:
                continue
            dia_id = f"D{int(m.group(1))}:{int(m.group(2))}"
            if known is not None and dia_id not in known:
                continue
            if dia_id not in out:
                out.append(dia_id)
    return tuple(out)


def _session_numbers(conversation: dict[str, object]) -> list[int]:
    nums = []
    for key, value in conversation.items():
        m = re.fullmatch(r"session_(\d+)", key)
        if m and isinstance(value, list):
            nums.append(int(m.group(1)))
    return sorted(nums)


def load_locomo(path: StrPath) -> list[LocomoConversation]:
    """Load LoCoMo conversations from the JSON file at ``path``.

    Sessions are the ``session_N`` keys holding a list (some date keys have no
    session). Each turn's ``created_at`` is its session's date plus one second per
    preceding turn of the session. Questions whose evidence is empty after
    normalisation are skipped.
    """
    with Path(path).open(encoding="utf-8") as fh:
        samples = json.load(fh)
    conversations: list[LocomoConversation] = []
    for sample in samples:
        conv = sample["conversation"]
        turns: list[LocomoTurn] = []
        session_dates: dict[int, datetime] = {}
        for n in _session_numbers(conv):
            date_raw = conv.get(f"session_{n}_date_time")
            if not isinstance(date_raw, str):
                raise ValueError(f"{sample.get('sample_id')}: session_{n} has no date")
            start = parse_locomo_datetime(date_raw)
            session_dates[n] = start
            for i, t in enumerate(conv[f"session_{n}"]):
                turns.append(
                    LocomoTurn(
                        dia_id=normalise_evidence([t["dia_id"]])[0],
                        session=n,
                        index=i,
                        speaker=str(t["speaker"]),
                        text=str(t["text"]),
                        created_at=start + i * TURN_SPACING,
                        blip_caption=t.get("blip_caption"),
                    )
                )
        ids = {t.dia_id for t in turns}
        questions: list[LocomoQuestion] = []
        for qa in sample.get("qa", []):
            evidence = normalise_evidence(qa.get("evidence", []), ids)
            if not evidence:
                continue
            answer = qa.get("answer", qa.get("adversarial_answer", ""))
            questions.append(
                LocomoQuestion(
                    question=str(qa["question"]),
                    answer=str(answer),
                    category=int(qa["category"]),
                    evidence=evidence,
                )
            )
        conversations.append(
            LocomoConversation(
                sample_id=str(sample["sample_id"]),
                speaker_a=str(conv["speaker_a"]),
                speaker_b=str(conv["speaker_b"]),
                turns=turns,
                questions=questions,
                session_dates=session_dates,
            )
        )
    return conversations


# ---------------------------------------------------------------------- LongMemEval


@dataclass(frozen=True, slots=True)
class LongMemEvalTurn:
    role: str  # "user" or "assistant"
    content: str
    has_answer: bool
    index: int  # position within the session, from 0
    created_at: datetime  # session date + index * TURN_SPACING, UTC

    @property
    def memory_text(self) -> str:
        return f"{self.role}: {self.content}"


@dataclass(frozen=True, slots=True)
class LongMemEvalSession:
    session_id: str
    date: datetime  # from ``haystack_dates``, UTC
    turns: tuple[LongMemEvalTurn, ...]


@dataclass(slots=True)
class LongMemEvalQuestion:
    question_id: str
    question_type: str
    question: str
    answer: str
    question_date: datetime
    answer_session_ids: tuple[str, ...]
    sessions: list[LongMemEvalSession]

    @property
    def is_abstention(self) -> bool:
        return self.question_id.endswith("_abs")

    def answer_turn_keys(self) -> set[tuple[str, int]]:
        """``(session_id, turn index)`` of every turn flagged ``has_answer``."""
        return {(s.session_id, t.index) for s in self.sessions for t in s.turns if t.has_answer}


_LME_DT = re.compile(r"^\s*(\d{4})/(\d{1,2})/(\d{1,2})\s*(?:\([A-Za-z]+\))?\s*(\d{1,2}):(\d{2})\s*$")


def parse_longmemeval_datetime(value: str) -> datetime:
    """Parse a LongMemEval date such as ``"2023/05/20 (Sat) 02:21"`` as UTC."""
    m = _LME_DT.match(value)
    if not m:
        raise ValueError(f"unrecognised LongMemEval date: {value!r}")
    y, mo, d, h, mi = (int(g) for g in m.groups())
    return datetime(y, mo, d, h, mi, tzinfo=timezone.utc)


def load_longmemeval(path: StrPath) -> list[LongMemEvalQuestion]:
    """Load LongMemEval questions (each with its own haystack) from ``path``.

    Sessions keep the file's order (which is not always chronological); use
    ``LongMemEvalSession.date`` for time.
    """
    with Path(path).open(encoding="utf-8") as fh:
        items = json.load(fh)
    questions: list[LongMemEvalQuestion] = []
    for item in items:
        ids = item["haystack_session_ids"]
        dates = item["haystack_dates"]
        raw_sessions = item["haystack_sessions"]
        if not (len(ids) == len(dates) == len(raw_sessions)):
            raise ValueError(f"{item['question_id']}: haystack lists differ in length")
        sessions: list[LongMemEvalSession] = []
        for sid, date_raw, raw_turns in zip(ids, dates, raw_sessions, strict=True):
            start = parse_longmemeval_datetime(date_raw)
            turns = tuple(
                LongMemEvalTurn(
                    role=str(t["role"]),
                    content=str(t["content"]),
                    has_answer=bool(t.get("has_answer", False)),
                    index=i,
                    created_at=start + i * TURN_SPACING,
                )
                for i, t in enumerate(raw_turns)
            )
            sessions.append(LongMemEvalSession(session_id=str(sid), date=start, turns=turns))
        questions.append(
            LongMemEvalQuestion(
                question_id=str(item["question_id"]),
                question_type=str(item["question_type"]),
                question=str(item["question"]),
                answer=str(item["answer"]),
                question_date=parse_longmemeval_datetime(item["question_date"]),
                answer_session_ids=tuple(str(s) for s in item["answer_session_ids"]),
                sessions=sessions,
            )
        )
    return questions


# -------------------------------------------------------------------------- metrics


def recall_at_k(retrieved: Sequence[str], relevant: Iterable[str], k: int) -> float:
    """|top-k ∩ relevant| / |relevant| (0.0 when ``relevant`` is empty)."""
    rel = set(relevant)
    if not rel:
        return 0.0
    return len(rel.intersection(retrieved[:k])) / len(rel)


def mrr_at_k(retrieved: Sequence[str], relevant: Iterable[str], k: int) -> float:
    """Reciprocal rank of the first relevant item within the top k, else 0.0."""
    rel = set(relevant)
    for rank, item in enumerate(retrieved[:k], start=1):
        if item in rel:
            return 1.0 / rank
    return 0.0


def recall_all_at_k(retrieved: Sequence[object], relevant: Iterable[object], k: int) -> float:
    """1.0 if every relevant item is within the top k, else 0.0 (0.0 if none relevant)."""
    rel = set(relevant)
    if not rel:
        return 0.0
    return 1.0 if rel.issubset(retrieved[:k]) else 0.0


def rank_sessions(ranked_turn_sessions: Iterable[str]) -> list[str]:
    """Distinct session ids in order of their best-ranked turn.

    Pass the session id of each retrieved turn, best first; the result is the
    session ranking used for LongMemEval session-level recall_all@k.
    """
    seen: dict[str, None] = {}
    for sid in ranked_turn_sessions:
        seen.setdefault(sid, None)
    return list(seen)
