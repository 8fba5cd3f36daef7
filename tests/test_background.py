"""The pool recall overlaps its searches in, including after a fork."""

from __future__ import annotations

import os

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
