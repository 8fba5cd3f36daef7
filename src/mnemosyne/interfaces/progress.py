"""A one-line progress bar on stderr for long CLI jobs, shown only to a person watching.

The bar is the ``progress`` callback that long public operations accept
(``export_jsonl``, ``import_jsonl``, and the same ``(done, total)`` shape for any
other long job), so a command wires it in one line::

    with ProgressBar("exporting", quiet=args.quiet) as bar:
        mem.export_jsonl(path, progress=bar)

It draws nothing when stderr is not a terminal (pipes, CI, MCP) or with
``--quiet``, redraws at most every ``interval`` seconds so calling it per item
is cheap, and ends with a newline so later output starts on a clean line.
A job in stages draws one bar per stage (:class:`Stages`).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from types import TracebackType
from typing import TextIO


def format_progress(label: str, done: int, total: int | None, elapsed: float, width: int = 24) -> str:
    """The text of one progress line.

    >>> format_progress("exporting", 250, 1000, 1.5)
    'exporting  [######------------------]  25%  250/1,000  1.5s'
    >>> format_progress("importing", 250, None, 1.5)
    'importing  250  1.5s'
    """
    if total is None or total <= 0:
        return f"{label}  {done:,}  {elapsed:.1f}s"
    fraction = min(max(done / total, 0.0), 1.0)
    filled = int(fraction * width)
    bar = "#" * filled + "-" * (width - filled)
    return f"{label}  [{bar}]  {fraction:.0%}  {done:,}/{total:,}  {elapsed:.1f}s"


class ProgressBar:
    """Call it with ``(done, total)``; use it as a context manager to finish the line."""

    def __init__(
        self, label: str, *, quiet: bool = False, stream: TextIO | None = None, interval: float = 0.1
    ) -> None:
        self.label = label
        self.stream = sys.stderr if stream is None else stream
        self.enabled = not quiet and _is_terminal(self.stream)
        self.interval = interval
        self._started = time.monotonic()
        self._last_draw = float("-inf")
        self._last: tuple[int, int | None] | None = None
        self._width = 0

    def __call__(self, done: int, total: int | None = None) -> None:
        if not self.enabled:
            return
        self._last = (done, total)
        now = time.monotonic()
        if now - self._last_draw >= self.interval:
            self._last_draw = now
            self._draw(done, total, now)

    def close(self) -> None:
        """Draw the final state and end the line (only if anything was drawn)."""
        if self.enabled and self._last is not None:
            self._draw(*self._last, time.monotonic())
            self.stream.write("\n")
            self.stream.flush()
            self._last = None

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _draw(self, done: int, total: int | None, now: float) -> None:
        line = format_progress(self.label, done, total, now - self._started)
        # Pad over the previous line's tail: a line can get shorter (e.g. "1.0s" after "10.0s").
        self.stream.write("\r" + line.ljust(self._width))
        self.stream.flush()
        self._width = len(line)


class Stages:
    """Progress bars for a job in stages (an import stores, then embeds), each on a
    line of its own: the next stage's first report finishes the line before, so a
    finished stage never sits there looking stalled while the next one runs.

    >>> with Stages(quiet=args.quiet) as stages:
    ...     mem.import_jsonl(path, progress=stages("importing"), embedding_progress=stages("embedding"))
    """

    def __init__(self, *, quiet: bool = False, stream: TextIO | None = None) -> None:
        self._quiet = quiet
        self._stream = stream
        self._current: ProgressBar | None = None

    def __call__(self, label: str) -> Callable[[int, int | None], None]:
        bar = ProgressBar(label, quiet=self._quiet, stream=self._stream)

        def report(done: int, total: int | None = None) -> None:
            if self._current is not bar:
                self.close()
                self._current = bar
            bar(done, total)

        return report

    def close(self) -> None:
        if self._current is not None:
            self._current.close()

    def __enter__(self) -> Stages:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False
