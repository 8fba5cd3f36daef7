"""The ``mnemosyne`` command: a thin shell over the public API.

Each command parses its arguments, calls one public method and prints the result,
as a readable table or, with ``--json``, as JSON. Exit codes scripts can trust:
0 ok, 1 not found, 2 bad input (an ``InvalidInputError``), 3 any other failure
(storage, backup, the embedder, including one other than the database recorded,
a missing extra), 130 interrupted (Ctrl-C; the write under way is rolled back whole,
or kept whole if the interrupt came as it committed; an import interrupted once it
committed keeps it and says so), 141 the reader of the output went away (``| head``).
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import io
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

EXIT_OK, EXIT_NOT_FOUND, EXIT_BAD_INPUT, EXIT_FAILURE = 0, 1, 2, 3
EXIT_INTERRUPTED, EXIT_BROKEN_PIPE = 130, 141  # as a shell reports SIGINT and SIGPIPE


class _Parser(argparse.ArgumentParser):
    """Reports argument errors as JSON when ``--json`` was asked for: scripts that
    parse our errors must not meet argparse's usage text instead."""

    json_errors = False

    def error(self, message: str) -> NoReturn:
        if _Parser.json_errors:
            error = {"code": "invalid_input", "message": f"{self.prog}: {message}"}
            print(json.dumps({"error": error}), file=sys.stderr)
            sys.exit(EXIT_BAD_INPUT)
        super().error(message)


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    _Parser.json_errors = "--json" in arguments
    parser = build_parser()
    args = parser.parse_args(arguments)
    if not hasattr(args, "run"):
        parser.print_help()
        return EXIT_BAD_INPUT
    # Imported here so `mnemosyne --help` stays instant and works on a bare install.
    from .. import ImportInterrupted, InvalidInputError, MemoryNotFoundError, MnemosyneError

    _escape_what_the_terminal_cannot_show()
    try:
        with contextlib.ExitStack() as args.opened:  # every database a command opened is closed
            result = args.run(args)
    except MemoryNotFoundError as exc:
        return _fail(args, exc, EXIT_NOT_FOUND)
    except InvalidInputError as exc:
        return _fail(args, exc, EXIT_BAD_INPUT)
    except MnemosyneError as exc:
        return _fail(args, exc, EXIT_FAILURE)
    except BrokenPipeError:
        # Nobody reads the rest: stop quietly, as a process killed by SIGPIPE would.
        # Python's own flush of stdout at exit must not fail on the closed pipe too.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except OSError as exc:  # e.g. an export path that cannot be written
        return _fail(args, exc, EXIT_FAILURE, "os_error")
    except ImportInterrupted as exc:
        # Past its commit: the import is kept, and says so, with what still waits.
        return _fail(args, exc, EXIT_INTERRUPTED, exc.code, imported=exc.imported, waiting_for_vectors=exc.waiting)
    except KeyboardInterrupt:
        # Every write is one transaction: interrupted, it was rolled back whole (or,
        # as it committed, kept whole); never half done.
        return _fail(args, KeyboardInterrupt("interrupted"), EXIT_INTERRUPTED, "interrupted")
    return int(result or EXIT_OK)


def _escape_what_the_terminal_cannot_show() -> None:
    """Text the output cannot encode is printed as escapes rather than failing the
    command: on a terminal or pipe that is not UTF-8 (a latin-1 console, cp1252),
    and on any, a path's bytes that are not UTF-8 (Python reads them as lone
    surrogates; written as they came, they would make --json output invalid)."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")


def _utf8(stream: Any) -> bool:
    return codecs.lookup(getattr(stream, "encoding", None) or "utf-8").name == "utf-8"


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="mnemosyne",
        description="Durable memory for AI agents: remember, recall, back up and restore.",
    )
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")
    common = _Parser(add_help=False)
    common.add_argument("--db", help="database file (default: $MNEMOSYNE_DB or the user data folder)")
    common.add_argument("--session", default="default", help="session id (default: %(default)s)")
    common.add_argument("--json", action="store_true", help="print JSON instead of a table")
    common.add_argument(
        "-q", "--quiet", action="store_true",
        help="no progress bars and no confirmations; results and errors are still printed",
    )

    def command(
        name: str, run: Callable[[argparse.Namespace], int | None], help_text: str
    ) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, parents=[common], help=help_text, description=help_text)
        sub.set_defaults(run=run)
        return sub

    sub = command("remember", _remember, "store a memory and print its id")
    sub.add_argument("content", help="the text to remember")
    sub.add_argument("--source", default="conversation", help="where it came from (default: %(default)s)")
    sub.add_argument("--importance", type=float, default=0.5, help="0..1 (default: %(default)s)")
    sub.add_argument("--scope", choices=("session", "global"), default="session")
    sub.add_argument("--metadata", type=_json_object, help='JSON object, e.g. \'{"ticket": 42}\'')
    sub.add_argument("--created-at", help="when it happened, ISO 8601 (default: now)")
    sub.add_argument("--valid-until", help="when it stops being true, ISO 8601: recall leaves it out after then")
    sub.add_argument("--idempotency-key",
                     help="a key of your own: a retry with the same key and content stores nothing and prints "
                          "the same id, from any process")
    sub.add_argument("--allow-duplicate", action="store_true",
                     help="store it even if the same text was stored in the last 5 minutes")

    sub = command("recall", _recall, "print the memories most relevant to a query")
    sub.add_argument("query", help="what to look for, in plain words")
    sub.add_argument("-k", "--top-k", type=int, default=10, help="how many results (default: %(default)s)")
    sub.add_argument("--scope", choices=("session", "global"))
    sub.add_argument("--source", action="append", help="only this source (repeatable)")
    sub.add_argument("--since", help="only memories created at or after this ISO 8601 time")
    sub.add_argument("--until", help="only memories created at or before this ISO 8601 time")
    sub.add_argument("--include-consolidated", action="store_true", help="also search consolidated originals")
    sub.add_argument("--context", type=int, default=0,
                     help="also print this many neighbouring events before and after each result (default: 0)")
    sub.add_argument("--explain", action="store_true", help="also print each result's score components")

    sub = command("get", _get, "print one memory by id")
    sub.add_argument("id")

    sub = command("update", _update, "change a memory's content, importance or metadata")
    sub.add_argument("id")
    sub.add_argument("--content")
    sub.add_argument("--importance", type=float)
    sub.add_argument("--metadata", type=_json_object)

    sub = command("forget", _forget, "delete a memory from every index (an audit tombstone remains)")
    sub.add_argument("id")

    command("stats", _stats, "print counts, size, schema version and maintenance times")

    sub = command("backup", _backup, "write a verified backup of the database")
    sub.add_argument("backup_path")

    sub = command("verify-backup", _verify_backup, "check a backup's checksum and integrity")
    sub.add_argument("backup_path")

    sub = command("restore", _restore, "replace the database with a verified backup (the old one is kept)")
    sub.add_argument("backup_path")

    sub = command("doctor", _doctor, "check the database's health (read-only); exit 3 if a problem is found")
    sub.add_argument("--repair", action="store_true",
                     help="back up, then rebuild the derived indexes that failed from the rows")

    sub = command("export", _export, "write every memory to a JSON Lines file")
    sub.add_argument("path")

    sub = command("import", _import, "add the memories of a JSON Lines export (no duplicates)")
    sub.add_argument("path")

    sub = commands.add_parser(
        "mcp", help="serve these memories to AI agents over the Model Context Protocol",
        description="Serve Mnemosyne as an MCP server: over stdio (default, for a client that "
        "spawns it) or streamable HTTP with --http. Needs the 'mcp' extra.",
    )
    sub.set_defaults(run=_mcp)
    sub.add_argument("--db", help="database file (default: $MNEMOSYNE_DB or the user data folder)")
    sub.add_argument(
        "--session", default="default",
        help="session for calls that pass no session_id (default: %(default)s)",
    )
    sub.add_argument("--http", action="store_true", help="serve streamable HTTP instead of stdio")
    sub.add_argument("--host", default="127.0.0.1", help="HTTP address to listen on (default: %(default)s)")
    sub.add_argument("--port", type=_port, default=8765, help="HTTP port, 1-65535 (default: %(default)s)")
    sub.add_argument(
        "--backup-dir", help="where the backup tool writes (default: backups/ beside the database)"
    )

    sub = command("sleep", _sleep, "consolidate now: merge duplicates, summarise episodes, decay (undoable)")
    sub.add_argument("--dry-run", action="store_true", help="plan and report, change nothing")

    sub = command("undo-sleep", _undo_sleep, "put memories back as they were before a sleep run")
    sub.add_argument("report_id", help="the id printed by `mnemosyne sleep`")

    sub = command("timeline", _timeline, "print a session's events in the order they happened: the latest "
                  "--limit of them; stderr says when earlier ones were left out and the --before that reads them")
    sub.add_argument("--since", help="ISO 8601 start (inclusive)")
    sub.add_argument("--until", help="ISO 8601 end (inclusive)")
    sub.add_argument("--before", help="ISO 8601 end (exclusive): a page's first time, to read the events before it")
    sub.add_argument("--limit", type=int, default=100,
                     help="the latest this many events, 1 to 1000000, and any more at the first one's time "
                          "(default: %(default)s)")

    command("episodes", _episodes, "list a session's episodes with their size and summary")

    sub = command("reembed", _reembed, "switch to another embedding model, or fill in missing vectors")
    sub.add_argument(
        "--embedder",
        help="the new model: local, sentence-transformers:<model>, openai:<model> (see README)",
    )
    sub.add_argument("--missing", action="store_true", help="only embed memories that have no vector yet")
    return parser


# -- commands -------------------------------------------------------------------------


def _remember(args: argparse.Namespace) -> None:
    from ..core.timeutil import check_valid_until, optional_timestamp
    from ..core.validation import check_content, check_importance, check_label, check_metadata

    # Before the database is opened, or created.
    check_content(args.content)
    check_importance(args.importance)
    check_label(args.source, "source")
    check_metadata(args.metadata)
    created = optional_timestamp(args.created_at, "created_at")
    check_valid_until(args.valid_until, time.time() if created is None else created, created_given=created is not None)
    if args.idempotency_key is not None:
        check_label(args.idempotency_key, "idempotency_key")
    memory_id = _open(args, create=True).remember(
        args.content, source=args.source, importance=args.importance, scope=args.scope,
        metadata=args.metadata, created_at=args.created_at, valid_until=args.valid_until,
        idempotency_key=args.idempotency_key, allow_duplicate=args.allow_duplicate,
    )
    _emit(args, {"id": memory_id}, lambda: print(memory_id))


def _recall(args: argparse.Namespace) -> None:
    from ..core.timeutil import time_range
    from ..core.validation import MAX_CONTEXT, check_query, check_sources, check_top_k, check_whole

    # Before the database is opened, or created.
    check_query(args.query)
    check_top_k(args.top_k)
    check_sources(args.source)
    time_range(args.since, args.until)
    check_whole(args.context, "--context", 0, MAX_CONTEXT)
    results = _open_to_read(args).recall(
        args.query, args.top_k, scope=args.scope, source=args.source, since=args.since,
        until=args.until, include_consolidated=args.include_consolidated, context=args.context,
        explain=args.explain,
    )
    _emit(args, [m.to_dict() for m in results], lambda: _print_memories(results))


def _get(args: argparse.Namespace) -> None:
    from .. import MemoryNotFoundError

    memory = _open_to_read(args).get(args.id)
    if memory is None:
        raise MemoryNotFoundError(args.id, args.session)
    _emit(args, memory.to_dict(), lambda: _print_memory(memory))


def _update(args: argparse.Namespace) -> None:
    from ..core.validation import check_content, check_importance, check_metadata

    # Before the database is opened (and an older one migrated).
    if args.content is not None:
        check_content(args.content)
    if args.importance is not None:
        check_importance(args.importance)
    if args.metadata is not None:
        check_metadata(args.metadata)
    memory = _open(args).update(
        args.id, content=args.content, importance=args.importance, metadata=args.metadata
    )
    _emit(args, memory.to_dict(), lambda: _print_memory(memory))


def _forget(args: argparse.Namespace) -> None:
    _open(args).forget(args.id)
    _done(args, {"forgotten": args.id}, f"forgot {args.id}")


def _stats(args: argparse.Namespace) -> None:
    stats = _open_to_read(args).get_stats().to_dict()
    _emit(args, stats, lambda: _print_record(stats))


def _backup(args: argparse.Namespace) -> None:
    from ..dr.recovery import create_backup

    manifest = create_backup(db_path=_existing_db(args), backup_path=args.backup_path)
    _done(args, vars(manifest), f"backed up {manifest.memory_count} memories to {args.backup_path}")


def _verify_backup(args: argparse.Namespace) -> None:
    from ..dr.recovery import verify_backup

    manifest = verify_backup(args.backup_path)
    _done(args, vars(manifest), f"ok: {args.backup_path} holds {manifest.memory_count} memories")


def _restore(args: argparse.Namespace) -> None:
    from ..dr.recovery import restore_backup

    manifest = restore_backup(backup_path=args.backup_path, db_path=_db_path(args))
    _done(args, vars(manifest), f"restored {manifest.memory_count} memories from {args.backup_path}")


def _doctor(args: argparse.Namespace) -> int:
    # Not through Mnemosyne(): a database that cannot be opened still gets a diagnosis.
    from ..dr.doctor import diagnose, repair

    report = repair(_db_path(args)) if args.repair else diagnose(_db_path(args))
    _emit(args, report.to_dict(), lambda: _print_report(report))
    return EXIT_OK if report.ok else EXIT_FAILURE


def _export(args: argparse.Namespace) -> None:
    from ..core.validation import expand_user
    from ..transfer import is_stream
    from .progress import ProgressBar

    _refuse_dash(args.path, "/dev/stdout", "write the export there")
    with ProgressBar("exporting", quiet=args.quiet) as bar:
        count = _open_to_read(args).export_jsonl(args.path, progress=bar)
    if is_stream(expand_user(args.path, "path")):
        # The export may be stdout itself: its confirmation goes to stderr.
        if not args.quiet:
            done = {"exported": count, "path": args.path}
            print(json.dumps(done) if args.json else f"exported {count} memories", file=sys.stderr)
        return
    _done(args, {"exported": count, "path": args.path}, f"exported {count} memories to {args.path}")


def _import(args: argparse.Namespace) -> None:
    from ..core.validation import expand_user
    from ..transfer import read_jsonl
    from .progress import Stages

    _refuse_dash(args.path, "/dev/stdin", "read an export from there")
    # Read and checked whole before the database is opened, or created: a bad file
    # creates no database. Read once, as a pipe can be.
    export = read_jsonl(expand_user(args.path, "path"))
    with Stages(quiet=args.quiet) as stages:
        added = _open(args, create=True)._import_export(
            export, progress=stages("importing"), embedding_progress=stages("embedding")
        )
    _done(args, {"imported": added, "path": args.path}, f"imported {added} new memories from {args.path}")


def _mcp(args: argparse.Namespace) -> None:
    from .mcp_server import serve  # raises MissingDependencyError without the 'mcp' extra

    serve(args.db, args.session, http=args.http, host=args.host, port=args.port, backup_dir=args.backup_dir)


def _sleep(args: argparse.Namespace) -> None:
    mem = _open_to_read(args) if args.dry_run else _open(args)
    report = mem.sleep(dry_run=args.dry_run)
    _emit(args, report.to_dict(), lambda: _print_record(report.to_dict()))


def _undo_sleep(args: argparse.Namespace) -> None:
    _open(args).undo_sleep(args.report_id)
    _emit(args, {"undone": args.report_id}, lambda: print(f"undid sleep {args.report_id}"))


def _reembed(args: argparse.Namespace) -> None:
    from .. import InvalidInputError
    from ..memory import model_to_switch_to
    from .progress import ProgressBar

    if args.missing == bool(args.embedder):
        raise InvalidInputError("give either --embedder SPEC (switch models) or --missing (fill gaps)")
    # Built before the database is opened, or created: a bad spec changes nothing.
    new = model_to_switch_to(args.embedder) if args.embedder else None
    # Switching opens without embedding anything ("none" fits any recorded model), so a
    # MNEMOSYNE_EMBEDDER that already names the new model cannot block the switch.
    mem = _open(args) if args.missing else _open(args, embedder="none")
    with ProgressBar("embedding", quiet=args.quiet) as bar:
        count = mem.backfill_vectors(progress=bar) if new is None else mem.reembed(new, progress=bar)
    embedder = mem.get_stats().embedder
    _done(args, {"embedded": count, "embedder": embedder}, f"embedded {count} memories with {embedder}")


def _timeline(args: argparse.Namespace) -> None:
    from ..core.timeutil import time_before, time_range
    from ..core.validation import MAX_LIMIT, check_whole

    # Before the database is opened, or created; in the flag's words (the API's "None
    # for every event" is no value a command line can pass).
    check_whole(args.limit, "--limit", 1, MAX_LIMIT)
    time_range(args.since, args.until)
    time_before(args.before, args.since)
    mem = _open_to_read(args)
    events = mem.timeline(since=args.since, until=args.until, before=args.before, limit=args.limit)
    _emit(args, [m.to_dict() for m in events], lambda: _print_memories(events, scored=False))
    # A page holds every event at its first one's time, so --before that time reads
    # exactly the rest: none twice, none skipped, and paging back ends.
    if len(events) >= args.limit and not args.quiet and mem.timeline(
        since=args.since, until=args.until, before=events[0].created_at, limit=1
    ):
        first = events[0].created_at.isoformat()
        _notice(args, f"these are the latest {len(events)} events; earlier ones were left out: pass a larger "
                      f"--limit, or --before {first} (the first shown's time) for those before")


def _episodes(args: argparse.Namespace) -> None:
    found = _open_to_read(args).episodes()
    rows = [(e.started_at.strftime("%Y-%m-%d %H:%M"), e.ended_at.strftime("%Y-%m-%d %H:%M"), e.size,
             e.label or "", e.summary.content if e.summary else "") for e in found]
    _emit(args, [e.to_dict() for e in found],
          lambda: _print_table(("start", "end", "size", "label", "summary"), rows) if rows
          else print("no episodes"))


# -- helpers --------------------------------------------------------------------------


def _open(args: argparse.Namespace, create: bool = False, **options: Any) -> Any:
    """The database, closed when the command ends. Only a command that stores
    something (``create``) makes a new one: a mistyped --db is refused, not read
    as an empty database ("total 0" from a volume that is not mounted), nor as a
    memory not found there (a script would take a forgotten one as gone)."""
    from .. import Mnemosyne

    if not create:
        _existing_db(args)
    return args.opened.enter_context(Mnemosyne(session_id=args.session, db_path=args.db, **options))


def _open_to_read(args: argparse.Namespace) -> Any:
    """The database, for a command that only reads: no vector is filled in and no
    embedder recorded in passing (a database stored without one would otherwise take
    whichever this process has); recall still counts its results, as it does in the
    API. An older schema is upgraded on open, as by every command."""
    return _open(args, auto_backfill=False)


def _existing_db(args: argparse.Namespace) -> str:
    """The --db path, refused (exit 2) where there is no database."""
    from .. import InvalidInputError
    from ..core.validation import expand_user

    path = _db_path(args)
    if not expand_user(path, "--db").exists():
        raise InvalidInputError(f"there is no database at {path}; check --db")
    return path


def _db_path(args: argparse.Namespace) -> str:
    from ..memory import default_db_path

    if args.db is None:
        return str(default_db_path())
    if not args.db.strip():  # never "the default database" by accident
        from .. import InvalidInputError

        raise InvalidInputError("--db is empty; give the database file's path")
    return str(args.db)


def _refuse_dash(path: str, stream: str, use: str) -> None:
    """Refuse ``-`` as a path: many tools read it as standard input or output, so a
    file of that name would surprise; the stream has a name of its own."""
    if path == "-":
        from .. import InvalidInputError

        raise InvalidInputError(f"'-' is not a stream here: give {stream} to {use}, or ./- for a file named '-'")


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:  # RecursionError: nested thousands deep
        raise argparse.ArgumentTypeError(f"not valid JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("must be a JSON object")
    return value


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from exc
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port must be from 1 to 65535, got {text}")
    return port


def _emit(args: argparse.Namespace, data: Any, human: Callable[[], None]) -> None:
    if args.json:  # escaped as JSON allows where the output is not UTF-8
        print(json.dumps(data, ensure_ascii=not _utf8(sys.stdout), indent=2, default=str))
    else:
        human()


def _done(args: argparse.Namespace, data: Any, message: str) -> None:
    """Report a finished action: JSON with --json, nothing with --quiet, else one line."""
    if args.json or not args.quiet:
        _emit(args, data, lambda: print(message))


def _notice(args: argparse.Namespace, message: str) -> None:
    """Tell, on stderr, something about a result that stdout does not show."""
    print(json.dumps({"notice": message}) if args.json else f"mnemosyne: {message}", file=sys.stderr)


def _fail(args: argparse.Namespace, exc: BaseException, code: int, name: str | None = None, **details: Any) -> int:
    if getattr(args, "json", False):
        error = {"code": name or getattr(exc, "code", "error"), "message": str(exc), **details}
        print(json.dumps({"error": error}), file=sys.stderr)
    else:
        print(f"mnemosyne: error: {exc}", file=sys.stderr)
    return code


def _print_memories(memories: Sequence[Any], scored: bool = True) -> None:
    """A table of memories; ``scored`` for recall results (a timeline ranks nothing).
    A result's neighbouring events (``--context``) are rows around it without a score,
    and its score's parts (``--explain``) a line below it."""
    if not memories:
        print("no memories found")
        return
    header = ["created", "scope", "source", "id", "content"]

    def row(m: Any) -> list[str]:
        cells = [m.created_at.strftime("%Y-%m-%d %H:%M"), m.scope, m.source, m.id, m.content]
        return [f"{m.score:.3f}" if m.score is not None else "", *cells] if scored else cells

    if not any(m.context or m.explanation for m in memories):
        _print_table(["score", *header] if scored else header, [row(m) for m in memories])
        return
    for n, m in enumerate(memories):
        if n:
            print()
        events = sorted([*m.context, m], key=lambda event: (event.created_at, event.id))
        _print_table(["score", *header], [row(event) if event is m else ["", *row(event)[1:]] for event in events])
        if m.explanation:
            print("  " + "  ".join(f"{part}={value:.2f}" for part, value in m.explanation.items() if round(value, 2)))


def _print_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    # Every column but the last is padded; content goes last so it is never cut.
    shown = [[_shown(cell) for cell in row] for row in [header, *rows]]
    widths = [max(len(row[i]) for row in shown) for i in range(len(header) - 1)]
    for row in shown:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        print("  ".join([*cells, row[-1]]))


# Control characters but tab, line and paragraph separators and the marks that turn
# text right to left, as escapes: a memory's text must not move the cursor, clear
# the screen, start a row of its own or show reversed on the terminal that shows it.
_CONTROLS = {code: f"\\x{code:02x}" for code in [*range(0x09), *range(0x0a, 0x20), *range(0x7f, 0xa0)]} | {
    code: f"\\u{code:04x}" for code in [0x2028, 0x2029, *range(0x202a, 0x202f), *range(0x2066, 0x206a)]
}


def _shown(value: object) -> str:
    return str(value).translate(_CONTROLS)


def _print_report(report: Any) -> None:
    rows = [("ok" if c.ok else "FAIL", c.name, c.detail) for c in report.checks]
    _print_table(("status", "check", "detail"), rows)
    if report.repaired:
        print(f"rebuilt {', '.join(report.repaired)} (backup first: {report.backup_path})")
    print("healthy" if report.ok else f"{len(report.problems)} problem(s) found")


# Set on recall results only: for one memory read by id they would print as None and [].
_RECALL_ONLY = ("score", "explanation", "context")


def _print_memory(memory: Any) -> None:
    """One memory, field by field (its --json form keeps every field, as recall's does)."""
    _print_record({k: v for k, v in memory.to_dict().items() if k not in _RECALL_ONLY})


def _print_record(record: dict[str, Any]) -> None:
    width = max(len(key) for key in record)
    for key, value in record.items():
        if isinstance(value, (dict, list)):
            value = json.dumps(value, ensure_ascii=False)
        print(f"{key.ljust(width)}  {_shown(value)}")


if __name__ == "__main__":
    sys.exit(main())
