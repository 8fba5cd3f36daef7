"""The pool recall overlaps its searches in, including after a fork."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from mnemosyne import background


def test_results_and_errors_come_back_through_the_future():
    assert background.submit(lambda: 41 + 1).result() == 42
    with pytest.raises(ZeroDivisionError):
        background.submit(lambda: 1 / 0).result()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_forked_child_gets_a_working_pool():
    assert background.submit(lambda: 42).result() == 42  # the parent's pool now has threads
    pid = os.fork()
    if pid == 0:  # the child: the threads behind its copy of the pool do not exist
        try:
            ok = background.submit(lambda: 6 * 7).result(timeout=10) == 42
        except BaseException:
            ok = False
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


# The start of a script whose SIGUSR1 handler raises Stop.
RAISING_ON_SIGUSR1 = """
import signal
from mnemosyne import background
class Stop(Exception):
    pass
def handler(signum, frame):
    raise Stop
signal.signal(signal.SIGUSR1, handler)
"""

# A signal lands the moment the pool has started a thread, before it records the
# thread for the interpreter's exit to stop; its handler raises (a SIGTERM handler's
# sys.exit(), say).
SIGNALLED_AS_THE_POOL_STARTS = RAISING_ON_SIGUSR1 + """
import os, threading
original = threading.Thread.start
def start_then_signal(self):
    original(self)
    if self.name.startswith("mnemosyne"):
        os.kill(os.getpid(), signal.SIGUSR1)
threading.Thread.start = start_then_signal
try:
    background.submit(lambda: None).result()
except Stop:
    pass
threading.Thread.start = original
"""


@pytest.mark.skipif(not hasattr(signal, "pthread_sigmask"), reason="signals cannot be held back here")
def test_a_handler_raising_as_the_pool_starts_a_thread_does_not_hang_the_exit():
    # Before: the thread was never stopped, and the process hung at exit.
    done = subprocess.run([sys.executable, "-c", SIGNALLED_AS_THE_POOL_STARTS], capture_output=True, timeout=30)
    assert done.returncode == 0, done.stderr


# A handler raises on a timer every 0.2 ms while the main thread waits for pool work
# of 0.3 ms, again and again; it counts how each wait ended.
HANDLER_RAISING_DURING_WAITS = """
import json, signal, time
from mnemosyne import background
class Stop(Exception):
    pass
armed = [False]
def handler(signum, frame):
    if armed[0]:
        armed[0] = False
        raise Stop
signal.signal(signal.SIGALRM, handler)
ended = {"done": 0, "stopped": 0, "broken": 0}
signal.setitimer(signal.ITIMER_REAL, 0.0002, 0.0002)
end = time.monotonic() + 3
while time.monotonic() < end:
    try:
        future = background.submit(lambda: time.sleep(0.0003))
        armed[0] = True
        background.result_of(future)
        armed[0] = False
        ended["done"] += 1
    except Stop:
        ended["stopped"] += 1
    except RuntimeError:  # "cannot release un-acquired lock"
        armed[0] = False
        ended["broken"] += 1
signal.setitimer(signal.ITIMER_REAL, 0)
print(json.dumps(ended))
"""


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="no interval timer on this platform")
def test_a_handlers_exception_during_a_wait_for_pool_work_comes_out_as_itself():
    # Before (Future.result): about 3 waits a second ended in RuntimeError, and the
    # process then hung at exit.
    done = subprocess.run([sys.executable, "-c", HANDLER_RAISING_DURING_WAITS], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    ended = json.loads(done.stdout)
    assert ended["broken"] == 0 and ended["stopped"] > 0, ended


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="no interval timer on this platform")
def test_a_handlers_exception_ends_the_wait_at_once_and_the_work_still_finishes():
    class Stop(Exception):
        pass

    def stop(signum: int, frame: object) -> None:
        raise Stop

    previous = signal.signal(signal.SIGALRM, stop)
    try:
        future = background.submit(lambda: time.sleep(1.0) or 42)
        signal.setitimer(signal.ITIMER_REAL, 0.05)
        started = time.monotonic()
        with pytest.raises(Stop):
            background.result_of(future)
        assert time.monotonic() - started < 0.9  # not after the work
        assert background.result_of(future) == 42
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# A signal arrives just before signals are held back: its handler, which raises, runs
# at the interpreter's next check, after the block began (``interrupt_main`` trips the
# handler as a signal would, without the kernel, whatever the mask).
SIGNALLED_JUST_BEFORE_THE_BLOCK = RAISING_ON_SIGUSR1 + """
import _thread
real = signal.pthread_sigmask
def block_then_signal(how, mask):
    before = real(how, mask)
    if how == signal.SIG_BLOCK and mask:  # the block, not a read of the mask
        signal.pthread_sigmask = real
        _thread.interrupt_main(signal.SIGUSR1)
    return before
signal.pthread_sigmask = block_then_signal
try:
    background.submit(lambda: None).result()
except Stop:
    pass
print(sorted(real(signal.SIG_BLOCK, ())))
assert background.result_of(background.submit(lambda: 42)) == 42
"""


@pytest.mark.skipif(not hasattr(signal, "pthread_sigmask"), reason="signals cannot be held back here")
def test_a_signal_just_before_the_pool_holds_signals_back_leaves_them_as_they_were():
    # Before: the handler's exception left the block before it could undo it, and the
    # main thread held back every signal for good (Ctrl-C and SIGTERM went unhandled).
    done = subprocess.run([sys.executable, "-c", SIGNALLED_JUST_BEFORE_THE_BLOCK], capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []
