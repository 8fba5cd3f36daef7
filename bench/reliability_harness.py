"""Real-process building blocks for the reliability suite (bench and tests share them).

Every scenario runs real processes (``sys.executable`` on this file) on a real
SQLite file and checks the result with ``mnemosyne doctor`` plus its own counts:

- ``run_load``: writers, recallers, a backup taker (and sleep, once it exists) at once;
- ``run_crash``: a writer killed with SIGKILL at a random moment, then reopened;
- ``run_retry_storm``: processes retrying the same idempotency keys;
- ``MemoryMachine``: a hypothesis state machine (remember/update/forget/backup/restore/reopen).

Adding an operation to the crash test is one line in ``CRASH_OPERATIONS``.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mnemosyne import LeaseHeldError, Mnemosyne
from mnemosyne.core.consolidation import SleepPolicy
from mnemosyne.dr.doctor import diagnose
from mnemosyne.dr.recovery import create_backup, restore_backup, verify_backup
from mnemosyne.testing import HashEmbedder

HERE = Path(__file__).resolve()
# Sleeps promote important memories too, so that path runs under load and kill -9.
PROMOTING = SleepPolicy(promote_importance=0.9)


def phrase(*parts: object) -> str:
    """A distinctive, recallable token such as ``zq3w17x`` (digits keep it one word)."""
    return "zq" + "w".join(str(p) for p in parts) + "x"


# -- crash ------------------------------------------------------------------------------

def _op_remember(mem: Mnemosyne, rng: random.Random, i: int) -> None:
    mem.remember(f"crash event {phrase(os.getpid(), i)} " + "filler " * rng.randrange(50),
                 importance=rng.random(), idempotency_key=f"k{os.getpid()}-{i}")


def _op_remember_many(mem: Mnemosyne, rng: random.Random, i: int) -> None:
    mem.remember_many([f"batch {phrase(os.getpid(), i, j)} " + "text " * rng.randrange(30)
                       for j in range(rng.randrange(1, 40))])


def _some_id(mem: Mnemosyne, rng: random.Random) -> str | None:
    hits = mem.recall("crash event batch", top_k=20)
    return rng.choice(hits).id if hits else None


def _op_update(mem: Mnemosyne, rng: random.Random, i: int) -> None:
    memory_id = _some_id(mem, rng)
    if memory_id is not None:
        mem.update(memory_id, content=f"crash event updated {phrase(os.getpid(), i, 'u')}",
                   importance=rng.random())


def _op_forget(mem: Mnemosyne, rng: random.Random, i: int) -> None:
    memory_id = _some_id(mem, rng)
    if memory_id is not None:
        mem.forget(memory_id)


def _op_backup(mem: Mnemosyne, rng: random.Random, i: int) -> None:
    # A backup never replaces another, so each gets its own name.
    create_backup(db_path=mem.db_path, backup_path=mem.db_path.with_name(f"crash-backup-{os.getpid()}-{i}.bak"))


def _op_sleep(mem: Mnemosyne, rng: random.Random, i: int) -> None:
    try:
        mem.sleep(policy=PROMOTING)
    except LeaseHeldError:  # another process is sleeping: the documented answer
        pass


# name -> (operation, relative weight). One line per operation.
CRASH_OPERATIONS: dict[str, tuple[Callable[[Mnemosyne, random.Random, int], None], int]] = {
    "remember": (_op_remember, 6),
    "remember_many": (_op_remember_many, 3),
    "update": (_op_update, 2),
    "forget": (_op_forget, 2),
    "create_backup": (_op_backup, 1),
    "sleep": (_op_sleep, 1),
}


def crash_worker(db: str, seed: int) -> None:
    """Run random operations forever (until killed), printing 'ready' once started."""
    rng = random.Random(seed)
    names = list(CRASH_OPERATIONS)
    weights = [CRASH_OPERATIONS[name][1] for name in names]
    # The deterministic embedder starts in microseconds (the kill lands inside writes,
    # not inside a model load) and still writes vectors, so that path is crashed too.
    mem = Mnemosyne(session_id="crash", db_path=db, embedder=HashEmbedder(64))
    print("ready", flush=True)
    i = 0
    while True:
        i += 1
        CRASH_OPERATIONS[rng.choices(names, weights)[0]][0](mem, rng, i)


def check_database(db: Path) -> list[str]:
    """Problems found after a crash: it must open, pass doctor, and hold no partial memory."""
    problems = [f"{c.name}: {c.detail}" for c in diagnose(db).problems]
    try:
        with Mnemosyne(session_id="check", db_path=db, embedder=HashEmbedder(64)) as mem:
            mem.get_stats()
    except Exception as exc:  # noqa: BLE001 - any failure to reopen is the finding
        problems.append(f"reopen: {type(exc).__name__}: {exc}")
    return problems


@dataclass
class CrashResult:
    iterations: int = 0
    clean: int = 0
    failures: list[str] = field(default_factory=list)
    memories: int = 0


def run_crash(workdir: Path, iterations: int, max_delay: float = 0.6, seed: int = 0) -> CrashResult:
    """Start a writer, SIGKILL it after a random delay, check the database; repeat."""
    rng = random.Random(seed)
    db = workdir / "crash.db"
    result = CrashResult()
    for n in range(iterations):
        proc = subprocess.Popen(
            [sys.executable, str(HERE), "crash", str(db), str(rng.randrange(1 << 30))],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        assert proc.stdout is not None
        early = rng.random() < 0.2  # sometimes kill while it opens (and migrates)
        ready = "ready" if early else proc.stdout.readline().strip()
        time.sleep(rng.uniform(0, max_delay))
        proc.send_signal(signal.SIGKILL)
        _, err = proc.communicate()
        result.iterations += 1
        if ready != "ready" or proc.returncode != -signal.SIGKILL:
            result.failures.append(f"iteration {n}: worker failed before the kill: {err.strip()[-500:]}")
            continue
        problems = check_database(db)
        if problems:
            result.failures.append(f"iteration {n}: " + "; ".join(problems))
        else:
            result.clean += 1
    result.memories = _count(db)
    return result


# -- load -------------------------------------------------------------------------------

def writer(db: str, index: int, count: int, go: str, out: str) -> None:
    _wait_for(go)
    latencies, errors = [], []
    with Mnemosyne(session_id=f"writer-{index}", db_path=db) as mem:
        for i in range(count):
            start = time.perf_counter()
            try:
                mem.remember(f"load writer {index} item {i} {phrase(index, i)} about deploys and backups",
                             scope="global", importance=(i % 10) / 10)
            except Exception as exc:  # noqa: BLE001 - counted and reported, never hidden
                errors.append(f"{type(exc).__name__}: {exc}")
            latencies.append(time.perf_counter() - start)
    Path(out).write_text(json.dumps({"latencies": latencies, "errors": errors}))


def reader(db: str, index: int, go: str, stop: str, out: str) -> None:
    _wait_for(go)
    rng = random.Random(index)
    recalls, errors = 0, []
    with Mnemosyne(session_id=f"reader-{index}", db_path=db) as mem:
        while not os.path.exists(stop):
            try:
                mem.recall(rng.choice(["deploys", "backups", "load writer", f"item {rng.randrange(1000)}"]),
                           top_k=10)
                mem.get_stats()
                recalls += 1
            except Exception as exc:  # noqa: BLE001
                errors.append(f"{type(exc).__name__}: {exc}")
    Path(out).write_text(json.dumps({"recalls": recalls, "errors": errors}))


def maintainer(db: str, go: str, stop: str, out: str, every: float) -> None:
    """Takes a backup (and sleeps, once sleep exists) every ``every`` seconds."""
    _wait_for(go)
    backups, errors, sleeps = [], [], 0
    backup_dir = Path(db).parent / "backups"
    mem = Mnemosyne(session_id="maintainer", db_path=db, sleep_policy=PROMOTING)
    while not os.path.exists(stop):
        time.sleep(every)
        target = backup_dir / f"backup-{len(backups)}.bak"
        try:
            create_backup(db_path=db, backup_path=target)
            backups.append(str(target))
            mem.sleep()  # consolidation under load
            sleeps += 1
        except Exception as exc:  # noqa: BLE001
            errors.append(f"{type(exc).__name__}: {exc}")
    mem.close()
    Path(out).write_text(json.dumps({"backups": backups, "errors": errors, "sleeps": sleeps}))


@dataclass
class LoadResult:
    writers: int
    per_writer: int
    seconds: float
    errors: list[str]
    memories: int
    duplicates: int
    latencies: list[float]
    recalls: int
    backups: int
    backups_restored: int
    sleeps: int
    integrity: str
    doctor_ok: bool

    def percentile(self, q: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def run_load(workdir: Path, writers: int = 8, per_writer: int = 1000, readers: int = 4,
             backup_every: float = 3.0) -> LoadResult:
    db = workdir / "load.db"
    Mnemosyne(db_path=db).close()  # create and migrate once, outside the timing
    go, stop = workdir / "go", workdir / "stop"
    procs, outs = [], {}
    for w in range(writers):
        outs[f"w{w}"] = workdir / f"w{w}.json"
        procs.append(_spawn("writer", db, w, per_writer, go, outs[f"w{w}"]))
    for r in range(readers):
        outs[f"r{r}"] = workdir / f"r{r}.json"
        procs.append(_spawn("reader", db, r, go, stop, outs[f"r{r}"]))
    outs["m"] = workdir / "m.json"
    procs.append(_spawn("maintainer", db, go, stop, outs["m"], backup_every))
    time.sleep(1.0)  # let every process import and open before the start signal
    start = time.perf_counter()
    go.touch()
    for proc in procs[:writers]:
        proc.wait()
    seconds = time.perf_counter() - start
    stop.touch()
    for proc in procs[writers:]:
        proc.wait()
    errors: list[str] = []
    latencies: list[float] = []
    recalls = 0
    for key, path in outs.items():
        if not path.exists():
            errors.append(f"process {key} died without a report")
            continue
        data = json.loads(path.read_text())
        errors.extend(data["errors"])
        latencies.extend(data.get("latencies", []))
        recalls += data.get("recalls", 0)
    maint = json.loads(outs["m"].read_text()) if outs["m"].exists() else {"backups": [], "sleeps": 0}
    restored = sum(_restores(Path(b), workdir) for b in maint["backups"])
    with sqlite3.connect(db) as conn:
        memories = conn.execute("SELECT count(*) FROM memories").fetchone()[0]
        duplicates = conn.execute(
            "SELECT coalesce(sum(n - 1), 0) FROM (SELECT count(*) AS n FROM memories GROUP BY content_hash)"
        ).fetchone()[0]
        integrity = conn.execute("PRAGMA integrity_check").fetchone()[0]
    return LoadResult(
        writers, per_writer, seconds, errors, memories, duplicates, latencies, recalls,
        len(maint["backups"]), restored, maint.get("sleeps", 0), integrity, diagnose(db).ok,
    )


def _restores(backup: Path, workdir: Path) -> int:
    """1 if the backup verifies, restores into a fresh file and that file is healthy."""
    target = workdir / "restored" / (backup.stem + ".db")
    try:
        manifest = verify_backup(backup)
        restore_backup(backup_path=backup, db_path=target)
        ok = diagnose(target).ok and _count(target) == manifest.memory_count
        return int(ok)
    except Exception:  # noqa: BLE001 - counted as a failed restore
        return 0


# -- retry storm ------------------------------------------------------------------------

def retrier(db: str, seed: int, keys: int, go: str, out: str) -> None:
    _wait_for(go)
    rng = random.Random(seed)
    order = list(range(keys)) * 2  # every key retried twice by every process
    rng.shuffle(order)
    ids: dict[str, str] = {}
    errors: list[str] = []
    with Mnemosyne(session_id="storm", db_path=db) as mem:
        for k in order:
            try:
                # allow_duplicate: only the idempotency key may prevent the duplicate here.
                got = mem.remember(f"storm item {phrase(k)}", idempotency_key=f"storm-{k}",
                                   allow_duplicate=True)
            except Exception as exc:  # noqa: BLE001
                errors.append(f"{type(exc).__name__}: {exc}")
                continue
            if ids.setdefault(str(k), got) != got:
                errors.append(f"key {k} returned two ids")
    Path(out).write_text(json.dumps({"ids": ids, "errors": errors}))


@dataclass
class StormResult:
    processes: int
    keys: int
    attempts: int
    memories: int
    errors: list[str]
    consistent_ids: bool


def run_retry_storm(workdir: Path, processes: int = 4, keys: int = 500) -> StormResult:
    db = workdir / "storm.db"
    Mnemosyne(db_path=db).close()
    go = workdir / "storm-go"
    outs = [workdir / f"storm{p}.json" for p in range(processes)]
    procs = [_spawn("retrier", db, p, keys, go, outs[p]) for p in range(processes)]
    time.sleep(0.5)
    go.touch()
    for proc in procs:
        proc.wait()
    errors: list[str] = []
    maps = []
    for path in outs:
        if not path.exists():
            errors.append(f"{path.name}: process died")
            continue
        data = json.loads(path.read_text())
        errors.extend(data["errors"])
        maps.append(data["ids"])
    consistent = all(m == maps[0] for m in maps) and len(maps) == processes
    return StormResult(processes, keys, processes * keys * 2, _count(db), errors, consistent)


# -- helpers ----------------------------------------------------------------------------

def _spawn(role: str, *args: Any) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, str(HERE), role, *map(str, args)])


def _wait_for(path: str) -> None:
    while not os.path.exists(path):
        time.sleep(0.01)


def _count(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute("SELECT count(*) FROM memories").fetchone()[0])


def fresh_dir(prefix: str) -> Path:
    return Path(tempfile.mkdtemp(prefix=prefix))


def remove_dir(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


_ROLES: dict[str, Callable[..., None]] = {
    "crash": lambda db, seed: crash_worker(db, int(seed)),
    "writer": lambda db, i, n, go, out: writer(db, int(i), int(n), go, out),
    "reader": lambda db, i, go, stop, out: reader(db, int(i), go, stop, out),
    "maintainer": lambda db, go, stop, out, every: maintainer(db, go, stop, out, float(every)),
    "retrier": lambda db, seed, keys, go, out: retrier(db, int(seed), int(keys), go, out),
}

if __name__ == "__main__":
    _ROLES[sys.argv[1]](*sys.argv[2:])
