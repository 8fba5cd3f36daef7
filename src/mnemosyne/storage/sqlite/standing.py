"""What stands for what after sleep, kept true as memories are edited and forgotten.

Sleep leaves links: a summary ``summarises`` its episode's events, and a kept copy
``merges`` the copies folded into it. An original is ``consolidated`` (out of default
recall) only while something that stands for it still says what it says. So when a
summary loses a quote, or a memory's text changes, the originals it stood for are
judged again, by the rule that consolidated them, and made active where nothing
stands for them any more.

    unquote(conn, memory_id, old_text, "forgot quoted memory ...")
    reinstate(conn, originals_of(conn, memory_id), "its text changed")
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Mapping
from typing import Any

from ...core.consolidation import DEFAULT_POLICY, SHARED_SESSION, sharing_key, still_stands_for
from ...core.dedup import fact_key, same_by_words, same_wording, written_words
from ...core.fingerprint import content_hash
from ...core.summarise import covering, without_quotes_of
from .cjk_index import index_edited
from .rows import audit, dump_json

_STANDING = "('summarises', 'merges')"


def originals_of(conn: sqlite3.Connection, memory_id: str) -> list[str]:
    """The memories ``memory_id`` summarises or merges."""
    return [r[0] for r in conn.execute(
        f"SELECT dst_id FROM memory_links WHERE src_id = ? AND kind IN {_STANDING}", (memory_id,))]


def sharing_memories_of(conn: sqlite3.Connection, memory_id: str) -> list[str]:
    """The memories sleep shared between sessions that hold ``memory_id`` as a copy."""
    return [r[0] for r in conn.execute(
        "SELECT l.src_id FROM memory_links AS l JOIN memories AS m ON m.id = l.src_id "
        "WHERE l.dst_id = ? AND l.kind = 'merges' AND m.session_id = ?", (memory_id, SHARED_SESSION))]


def holds_others_copies(conn: sqlite3.Connection, memory_id: str, session_id: str) -> bool:
    """Whether sleep folded another session's private copy into ``memory_id`` (of
    ``session_id``): a global memory that stands, as a shared one would, for what
    several sessions said. A shared memory folded into it is no session's copy: it
    was shared before and stands on its own."""
    return conn.execute(
        "SELECT 1 FROM memory_links AS l JOIN memories AS m ON m.id = l.dst_id "
        "WHERE l.src_id = ? AND l.kind = 'merges' AND m.session_id NOT IN (?, ?) LIMIT 1",
        (memory_id, session_id, SHARED_SESSION),
    ).fetchone() is not None


def held_by_one_session_at_most(conn: sqlite3.Connection, shared_id: str) -> bool:
    """Whether fewer than two sessions still hold the text of shared memory ``shared_id``:
    it was shared because several did."""
    shared = conn.execute("SELECT content FROM memories WHERE id = ?", (shared_id,)).fetchone()
    if shared is None:
        return False
    key = sharing_key(shared["content"])
    copies = conn.execute(
        "SELECT m.session_id, m.content FROM memory_links AS l JOIN memories AS m ON m.id = l.dst_id "
        "WHERE l.src_id = ? AND l.kind = 'merges'", (shared_id,)).fetchall()
    return len({c["session_id"] for c in copies if sharing_key(c["content"]) == key}) < 2


def unshared_keys(conn: sqlite3.Connection) -> list[str]:
    """The sharing keys of the shared memories agents forgot, and of the global ones
    that other sessions' copies were folded into (recorded by that forget, or brought
    by an import): sleep does not share those texts again."""
    return [r[0] for r in conn.execute(
        "SELECT DISTINCT json_extract(detail, '$.unshared') AS key FROM audit_log "
        "WHERE key IS NOT NULL ORDER BY key")]


def unquote(conn: sqlite3.Connection, memory_id: str, old_text: str, reason: str, forgotten: bool = False) -> None:
    """Summaries that quote ``old_text``, the text ``memory_id`` no longer has, stop
    quoting it; what they then no longer say comes back. If ``memory_id`` is being
    forgotten, they say they cover one event fewer."""
    for (summary_id,) in conn.execute(
        "SELECT src_id FROM memory_links WHERE dst_id = ? AND kind = 'summarises'", (memory_id,)
    ).fetchall():
        unquote_summary(conn, summary_id, memory_id, old_text, reason, forgotten)


def unquote_summary(conn: sqlite3.Connection, summary_id: str, memory_id: str, old_text: str, reason: str,
                    forgotten: bool = False) -> None:
    """``summary_id`` stops quoting ``old_text``, the text ``memory_id`` no longer has."""
    summary = conn.execute(  # a summary's text only: a link can name any memory
        "SELECT seq, session_id, created_at, content, metadata FROM memories WHERE id = ? AND kind = 'summary'",
        (summary_id,),
    ).fetchone()
    if summary is None:
        return
    others = conn.execute(  # knowing them, a quote run into theirs is found too
        "SELECT m.content, m.created_at FROM memory_links AS l JOIN memories AS m ON m.id = l.dst_id "
        "WHERE l.src_id = ? AND l.kind = 'summarises' AND l.dst_id <> ? ORDER BY m.created_at, m.seq",
        (summary_id, memory_id)).fetchall()
    texts = [r["content"] for r in others]
    cleaned = without_quotes_of(summary["content"], old_text, texts)
    if forgotten and others:  # its header names how many events it covers, and when
        cleaned = covering(summary["content"], cleaned, texts, others[0]["created_at"], others[-1]["created_at"],
                           DEFAULT_POLICY.summary_max_chars, DEFAULT_POLICY.summary_max_sentences)
    if cleaned == summary["content"]:
        return
    fields = ["content"]
    metadata = json.loads(summary["metadata"] or "{}")
    if forgotten and isinstance(metadata, dict) and "sources" in metadata:  # sleep's count of its events
        metadata["sources"] = len(others)
        fields.append("metadata")
    conn.execute(
        "UPDATE memories SET content = ?, content_hash = ?, metadata = ?, updated_at = ? WHERE seq = ?",
        (cleaned, content_hash(cleaned), dump_json(metadata) if "metadata" in fields else summary["metadata"],
         time.time(), summary["seq"]),
    )
    index_edited(conn, summary["seq"], summary["session_id"], summary["created_at"], cleaned)
    conn.execute("DELETE FROM memory_vectors WHERE seq = ?", (summary["seq"],))  # re-embedded later
    audit(conn, "update", summary_id, summary["session_id"], {"fields": fields, "reason": reason})
    reinstate(conn, originals_of(conn, summary_id), reason)


def release_changed(conn: sqlite3.Connection, memory_id: str, reason: str) -> None:
    """``memory_id``'s text changed: the copies it no longer repeats are no longer
    merged into it (a shared memory edited into other text holds nobody's note), and
    whatever it stood for and no longer says comes back."""
    kept = conn.execute("SELECT session_id, content FROM memories WHERE id = ?", (memory_id,)).fetchone()
    _release_other_subjects(conn, memory_id, kept["content"], reason)
    originals = originals_of(conn, memory_id)
    for copy in conn.execute(
        "SELECT m.id, m.session_id, m.content FROM memory_links AS l JOIN memories AS m ON m.id = l.dst_id "
        "WHERE l.src_id = ? AND l.kind = 'merges'", (memory_id,)
    ).fetchall():
        if not stands_for({"kind": "merges", **kept}, copy):
            conn.execute("DELETE FROM memory_links WHERE src_id = ? AND dst_id = ? AND kind = 'merges'",
                         (memory_id, copy["id"]))
    reinstate(conn, originals, reason)


def _release_other_subjects(conn: sqlite3.Connection, memory_id: str, text: str, reason: str) -> None:
    """``memory_id`` now reads ``text``: the supersede links of a subject it no longer
    states go. "The backup on-call engineer is Eve." is no newer value of "The
    on-call engineer is Dana.", nor older than "The on-call engineer is Frank.".
    What it superseded passes to what superseded it, if that states the subject;
    else it is current again. Itself, superseded by nothing left, is current again."""
    subject = _subject(text)
    superseders = conn.execute(
        "SELECT m.id, m.content FROM memory_links AS l JOIN memories AS m ON m.id = l.src_id "
        "WHERE l.dst_id = ? AND l.kind = 'supersedes'", (memory_id,)
    ).fetchall()
    for old in conn.execute(
        "SELECT m.id, m.session_id, m.content FROM memory_links AS l JOIN memories AS m ON m.id = l.dst_id "
        "WHERE l.src_id = ? AND l.kind = 'supersedes' AND m.status = 'superseded'", (memory_id,)
    ).fetchall():
        old_subject = _subject(old["content"])
        if subject is not None and subject == old_subject:
            continue
        _unlink(conn, memory_id, old["id"])
        heir = next((s["id"] for s in superseders if old_subject is not None and _subject(s["content"]) == old_subject),
                    None)
        if heir is not None:
            conn.execute("INSERT OR IGNORE INTO memory_links (src_id, dst_id, kind, run_id, created_at) "
                         "VALUES (?, ?, 'supersedes', NULL, ?)", (heir, old["id"], time.time()))
        else:
            _make_current(conn, old["id"], old["session_id"], reason)
    kept = [s for s in superseders if subject is not None and _subject(s["content"]) == subject]
    for other in superseders:
        if other not in kept:
            _unlink(conn, other["id"], memory_id)
    row = conn.execute("SELECT session_id, status FROM memories WHERE id = ?", (memory_id,)).fetchone()
    if row["status"] == "superseded" and not kept:
        _make_current(conn, memory_id, row["session_id"], reason)


def _subject(text: str) -> str | None:
    fact = fact_key(text)  # its attribute, whatever the kind of value: "4pm" and "4 pm" alike
    return None if fact is None else fact.attribute


def _unlink(conn: sqlite3.Connection, newer: str, older: str) -> None:
    conn.execute("DELETE FROM memory_links WHERE src_id = ? AND dst_id = ? AND kind = 'supersedes'", (newer, older))


def _make_current(conn: sqlite3.Connection, memory_id: str, session_id: str, reason: str) -> None:
    conn.execute("UPDATE memories SET status = 'active', updated_at = ? WHERE id = ?", (time.time(), memory_id))
    audit(conn, "update", memory_id, session_id, {"fields": ["status"], "reason": reason})


def reinstate(conn: sqlite3.Connection, memory_ids: Iterable[str], reason: str) -> None:
    """Make active again each consolidated memory among ``memory_ids`` that nothing
    stands for any more: condensing never makes a fact unfindable.

    Superseded memories stay superseded: a correction being forgotten does not make
    the old value true again.
    """
    now = time.time()
    for memory_id in memory_ids:
        original = conn.execute(
            "SELECT session_id, content FROM memories WHERE id = ? AND status = 'consolidated'", (memory_id,)
        ).fetchone()
        if original is None:
            continue
        standing = conn.execute(
            f"SELECT l.kind, m.session_id, m.content, m.metadata FROM memory_links AS l "
            f"JOIN memories AS m ON m.id = l.src_id WHERE l.dst_id = ? AND l.kind IN {_STANDING}",
            (memory_id,),
        ).fetchall()
        if not any(stands_for(link, original) for link in standing):
            conn.execute("UPDATE memories SET status = 'active', updated_at = ? WHERE id = ?", (now, memory_id))
            audit(conn, "update", memory_id, original["session_id"], {"fields": ["status"], "reason": reason})


def stands_for(representative: Mapping[str, Any], original: Mapping[str, Any]) -> bool:
    """Whether ``representative``, as it reads now, is what sleep would still fold
    ``original`` into: the same words for a copy (the very same, across sessions),
    or a summary saying it by the rule of the sleep that made it."""
    if representative["kind"] == "merges":
        if representative["session_id"] != original["session_id"]:  # a shared or global copy
            # Across sessions only the very same wording is shared.
            shared, own = written_words(representative["content"]), written_words(original["content"])
            return sharing_key(representative["content"]) == sharing_key(original["content"]) and same_wording(
                shared, own) and same_wording(own, shared)
        return same_by_words(representative["content"], original["content"])
    rule = json.loads(representative["metadata"] or "{}").get("rule")
    return still_stands_for(original["content"], representative["content"], rule)
