"""Time-sortable memory ids (UUID version 7, RFC 9562).

Ids sort in creation order, so ``ORDER BY id`` is insertion order and two processes
never collide. Python 3.11 has no ``uuid.uuid7``, so this builds one: 48 bits of
Unix milliseconds, then a per-process counter (monotonic within a millisecond),
then random bits.
"""

from __future__ import annotations

import os
import time
import uuid

from .. import _fork

_lock = _fork.Lock()
_last_ms = 0
_counter = 0


def new_id() -> str:
    """Return a new UUIDv7 string, strictly increasing within this process."""
    global _last_ms, _counter
    with _lock:
        now_ms = time.time_ns() // 1_000_000
        if now_ms <= _last_ms:
            # Same (or an earlier, if the clock stepped back) millisecond: keep order
            # by counting up instead of trusting the clock.
            _counter += 1
            if _counter >= 1 << 12:
                _last_ms += 1
                _counter = 0
            now_ms = _last_ms
        else:
            _last_ms = now_ms
            _counter = 0
        counter = _counter
    rand = int.from_bytes(os.urandom(8), "big") & ((1 << 62) - 1)
    value = (now_ms & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76  # version 7
    value |= counter << 64
    value |= 0b10 << 62  # RFC 4122 variant
    value |= rand
    return str(uuid.UUID(int=value))
