"""Python run in a new process whose files may not grow past a size (``ulimit -f``):
a disk filling up, without the root a tiny mount needs.

SQLite meets the limit as it meets a full disk: a short write (``SQLITE_FULL``) or
the system's EFBIG (a plain ``SQLITE_IOERR``). Python ignores the SIGXFSZ that comes
with it, so the write fails rather than the process. The snippet may call
``report(error)`` to print a Mnemosyne error's class and code, then its message.

    done = under_size_limit(50_000, "open(sys.argv[1], 'w').write('x' * 60_000)", "big.txt")
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

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
