"""Imports into the SQLite store: an export's memories, episodes, links and
forgotten ids, added in one transaction to what the database already holds."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ...errors import ImportInterrupted, InvalidInputError
from ..base import NewMemory
from .connection import Database, InterruptedAfterCommit
from .context_index import refresh_contexts
from .rows import Inserting, audit
from .standing import stands_for, unquote_summary, unshared_keys


class ImportRows:
    """Mixed into :class:`SQLiteStore`; every import is one transaction."""

    _db: Database

    if TYPE_CHECKING:  # defined by the store and the vector mixin
        def _insert_one(
            self, conn: sqlite3.Connection, memory: NewMemory, inserting: Inserting, text_stored: bool = True
        ) -> tuple[str, int | None]: ...

        def newest_seq(self) -> int: ...

        def count_missing_vectors(self, up_to: int) -> int: ...

    def import_memories(
        self,
        memories: Iterable[NewMemory],
        usage: Mapping[str, Mapping[str, Any]] | None = None,
        episodes: Sequence[Mapping[str, Any]] = (),
        links: Sequence[Mapping[str, Any]] = (),
        unshared: Iterable[str] = (),
        tombstones: Mapping[str, str] | None = None,
        where: Mapping[str, str] | None = None,
    ) -> int:
        """Add, in one transaction, the episodes and memories whose id is not stored
        yet, the links and ``unshared`` sharing keys not stored yet; return how many
        memories were added.

        ``tombstones`` maps the ids of memories forgotten where the import comes from
        to their sessions: each one not stored here is recorded as forgotten here
        too. One this database holds is kept (an import never deletes).

        ``usage`` maps a memory id to its kept columns (strength, occurrences,
        last_seen_at, access_count, last_accessed_at), written for added memories.
        Each link holds its columns (src_id, dst_id, kind, run_id, created_at) and
        ``where``, how to name it in an error (its file and line), as the ``where``
        argument names each memory, by id. A link whose end is in neither the
        import nor the database raises :class:`InvalidInputError` and nothing is
        written: without it, forget would leave a forgotten memory quoted in a summary.

        A memory forgotten in this database stays forgotten: an older export does not
        bring it back. It is skipped, its links too, and an imported summary that
        quotes it stops quoting it.

        A Ctrl-C that Python raises as the commit returns, once it committed, raises
        :class:`ImportInterrupted` with the count of memories added.
        """
        try:
            with self._db.write("import memories") as conn:
                added = self._import_rows(conn, memories, usage or {}, episodes, links, unshared, tombstones, where)
        except InterruptedAfterCommit as exc:
            # Stored whole: this interrupt must not read as "nothing was imported".
            raise ImportInterrupted(added, self.count_missing_vectors(self.newest_seq())) from exc
        return added

    def _import_rows(
        self,
        conn: sqlite3.Connection,
        memories: Iterable[NewMemory],
        kept: Mapping[str, Mapping[str, Any]],
        episodes: Sequence[Mapping[str, Any]],
        links: Sequence[Mapping[str, Any]],
        unshared: Iterable[str],
        tombstones: Mapping[str, str] | None,
        where: Mapping[str, str] | None,
    ) -> int:
        """:meth:`import_memories` inside its transaction; how many memories it added."""
        added = 0
        forgotten: dict[str, str] = {}  # id -> the text an old export still holds
        stored_as: dict[str, str] = {}  # a file's id -> the id its idempotency key has here
        held: dict[str, NewMemory] = {}  # the file's version of each memory already stored here
        touched: dict[str, list[tuple[float, int]]] = {}
        for memory_id, session_id in sorted((tombstones or {}).items()):
            if not conn.execute(
                "SELECT 1 FROM memories WHERE id = ? UNION ALL "
                "SELECT 1 FROM audit_log WHERE memory_id = ? AND op = 'forget'", (memory_id, memory_id)
            ).fetchone():
                audit(conn, "forget", memory_id, session_id, {"imported": True})
        conn.executemany(
            "INSERT INTO episodes (id, session_id, label, started_at, ended_at) "
            "VALUES (:id, :session_id, :label, :started_at, :ended_at) ON CONFLICT (id) DO NOTHING",
            episodes,
        )
        with Inserting(conn, "import") as inserting:
            for memory in memories:
                exists = conn.execute("SELECT 1 FROM memories WHERE id = ?", (memory.id,)).fetchone()
                if exists is not None:
                    held[memory.id] = memory
                elif conn.execute(
                    "SELECT 1 FROM audit_log WHERE memory_id = ? AND op = 'forget'", (memory.id,)
                ).fetchone():
                    forgotten[memory.id] = memory.content
                else:
                    try:
                        stored_id, seq = self._insert_one(conn, memory, inserting)
                    except InvalidInputError as exc:  # its idempotency key names another memory
                        named = f"memory {memory.id}"
                        if where and memory.id in where:
                            named = f"{where[memory.id]}: {named}"
                        raise InvalidInputError(f"{named}: {exc}; nothing was imported") from exc
                    if stored_id != memory.id:  # the same write, stored here under its own id
                        stored_as[memory.id] = stored_id
                    if seq is not None:
                        if memory.id in kept:
                            conn.execute(
                                "UPDATE memories SET strength = :strength, occurrences = :occurrences, "
                                "last_seen_at = :last_seen_at, access_count = :access_count, "
                                "last_accessed_at = :last_accessed_at WHERE seq = :seq",
                                {**kept[memory.id], "seq": seq},
                            )
                        touched.setdefault(memory.session_id, []).append((memory.created_at, seq))
                        added += 1
        to_unquote = [(link["src_id"], link["dst_id"]) for link in links
                      if link["dst_id"] in forgotten and link["kind"] == "summarises"]
        links = [link for link in links if not {link["src_id"], link["dst_id"]}.intersection(forgotten)]
        # Merging databases that both hold one retried write: its links hold here too.
        links = [{**link, "src_id": stored_as.get(link["src_id"], link["src_id"]),
                  "dst_id": stored_as.get(link["dst_id"], link["dst_id"])} for link in links]
        links = [link for link in links if link["src_id"] != link["dst_id"]]
        for link in links:
            for end in (link["src_id"], link["dst_id"]):
                if conn.execute("SELECT 1 FROM memories WHERE id = ?", (end,)).fetchone() is None:
                    raise InvalidInputError(
                        f"{link['where']}: the {link['kind']} link refers to memory {end}, which is "
                        "not in the database and was not imported; nothing was imported"
                    )
        new_links = [link for link in links if conn.execute(
            "SELECT 1 FROM memory_links WHERE src_id = ? AND dst_id = ? AND kind = ?",
            (link["src_id"], link["dst_id"], link["kind"])).fetchone() is None]
        conn.executemany(
            "INSERT INTO memory_links (src_id, dst_id, kind, run_id, created_at) "
            "VALUES (:src_id, :dst_id, :kind, :run_id, :created_at) ON CONFLICT DO NOTHING",
            [{k: v for k, v in link.items() if k != "where"} for link in new_links],
        )
        self._stand_in_as_exported(conn, new_links, held)
        for summary_id, gone in to_unquote:  # once linked: what it no longer says comes back
            unquote_summary(conn, summary_id, gone, forgotten[gone], f"forgot quoted memory {gone}")
        # Forgotten there, so not to be shared here: sleep reads the audit log.
        for key in sorted(set(unshared) - set(unshared_keys(conn))):
            audit(conn, "import", None, None, {"unshared": key})
        for session_id, positions in touched.items():
            refresh_contexts(conn, session_id, positions)
        return added

    @staticmethod
    def _stand_in_as_exported(
        conn: sqlite3.Connection, new_links: Sequence[Mapping[str, Any]], held: Mapping[str, NewMemory]
    ) -> None:
        """A memory stored here, unchanged, that the exporting database's sleep then
        condensed (a summary or a kept copy now stands for it): it takes the status
        the export gives it, as a sleep here would have. Left active, recall would
        return it beside what stands for it, and no sleep here would ever fold it,
        since the link says it is done."""
        for link in new_links:
            exported = held.get(link["dst_id"])
            if exported is None or exported.status not in ("consolidated", "superseded"):
                continue
            if link["kind"] != "supersedes":  # what stands for it must, as it reads here
                representative = conn.execute(
                    "SELECT session_id, content, metadata FROM memories WHERE id = ?", (link["src_id"],)
                ).fetchone()
                original = {"session_id": exported.session_id, "content": exported.content}
                if not stands_for({**dict(representative), "kind": link["kind"]}, original):
                    continue
            changed = conn.execute(
                "UPDATE memories SET status = ?, updated_at = ? "
                "WHERE id = ? AND status = 'active' AND content_hash = ?",
                (exported.status, time.time(), exported.id, exported.content_hash),
            ).rowcount
            if changed:
                audit(conn, "import", exported.id, exported.session_id, {"status": exported.status})
