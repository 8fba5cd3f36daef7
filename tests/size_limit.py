"""A disk filling up, two ways: Python run in a new process whose files may not grow
past a size (``ulimit -f``), which needs no root; and a tiny tmpfs really filled,
which does (the test skips, saying why, where the machine does not allow it).

SQLite meets the limit as it meets a full disk: a short write (``SQLITE_FULL``) or
the system's EFBIG (a plain ``SQLITE_IOERR``). Python ignores the SIGXFSZ that comes
with it, so the write fails rather than the process. The snippet may call
``report(error)`` to print a Mnemosyne error's class and code, then its message.

    done = under_size_limit(50_000, "open(sys.argv[1], 'w').write('x' * 60_000)", "big.txt")
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

_SETUP = """\
import resource, sys
resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit}))

def report(error):
    print(type(error).__name__, error.code)
    print(error)

"""


def under_size_limit(limit: int, snippet: str, *args: str) -> subprocess.CompletedProcess:
    """Run ``snippet`` (``args`` are its ``sys.argv[1:]``) where no file may grow past
    ``limit`` bytes; return the finished process, its output as text."""
    code = _SETUP.format(limit=int(limit)) + textwrap.dedent(snippet)
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120)


@contextlib.contextmanager
def tiny_disk(folder: Path, size: str = "1m") -> Iterator[Path]:
    """A tmpfs of ``size`` mounted at ``folder`` (made here), unmounted afterwards."""
    folder.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tiny tmpfs here (needs CAP_SYS_ADMIN): {done.stderr.strip()}")
    try:
        yield folder
    finally:
        if subprocess.run(["umount", str(folder)]).returncode != 0:
            subprocess.run(["umount", "-l", str(folder)], check=True)


def fill(folder: Path) -> Path:
    """Write a file in ``folder`` until no block is left; return it (unlink it for room)."""
    ballast = folder / "ballast"
    fd = os.open(ballast, os.O_WRONLY | os.O_CREAT)
    try:
        while os.write(fd, b"\0" * 4096):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)
    return ballast
