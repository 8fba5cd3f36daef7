"""Forked children of a process that has loaded ONNX Runtime.

ONNX Runtime keeps native threads: from 1.29 one starts as soon as it is imported
(its telemetry dispatcher), and a session running on more than one thread keeps a
pool. ``fork()`` copies their state into the child but not the threads, and what ONNX
Runtime does at exit then waits for them for ever or aborts the child
(``std::system_error``). Measured: a child that calls ``sys.exit(0)`` hangs with
onnxruntime 1.29 to 1.32 after a bare import (not with 1.19 to 1.28), and with every
version from 1.19 when the parent has a session on 2 threads, whose destruction
blocks in ``pthread_cond_destroy``.

So, in such a child:

- the parent's sessions are never destroyed (:func:`keep_for_ever`);
- once Python has finished (its atexit handlers run, its files flushed, its modules
  torn down), the process ends with ``_exit`` and the status given to ``exit()``,
  after flushing C streams: the C exit handlers registered before the fork, ONNX
  Runtime's among them, do not run. multiprocessing's children skip more: they end
  with ``os._exit`` before even the atexit handlers.

A child that ends with ``os._exit`` or replaces itself with ``exec`` never reaches
any of this.
"""

from __future__ import annotations

import ctypes
import logging
import sys

log = logging.getLogger("mnemosyne.embedders")

# Whether this process ends through _exit; a child's own children inherit the
# registration along with this flag.
_exit_status_only = False


def keep_for_ever(obj: object) -> None:
    """Make sure ``obj`` is never destroyed in this process, not even at its end."""
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(obj))


def after_fork_in_child() -> None:
    """In a fork's child: skip the native exit handlers if ONNX Runtime is loaded."""
    global _exit_status_only
    if not _exit_status_only and "onnxruntime" in sys.modules:
        _exit_status_only = _end_with_exit_status_only()


def _end_with_exit_status_only() -> bool:
    try:
        libc = ctypes.CDLL(None)
        # on_exit (glibc) hands its function the status given to exit().
        on_exit, exit_now, close_streams = libc.on_exit, libc._exit, libc.fcloseall
    except (OSError, AttributeError):
        log.debug("no on_exit in this C library: a forked child runs ONNX Runtime's exit handlers")
        return False
    on_exit.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    # exit() calls its handlers last registered first: C streams are flushed and
    # closed, then _exit ends the process with the status. Each function is handed
    # (status, NULL); arguments a function does not take are ignored, as the C
    # calling conventions of Linux allow.
    if on_exit(ctypes.cast(exit_now, ctypes.c_void_p), None) != 0:
        return False
    on_exit(ctypes.cast(close_streams, ctypes.c_void_p), None)
    return True
