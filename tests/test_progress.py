"""The progress line: its text, its throttling, and its silence when nobody watches."""

from __future__ import annotations

import io

from mnemosyne.interfaces.progress import ProgressBar, format_progress


class Terminal(io.StringIO):
    """A text stream that says it is a terminal, as a console's stderr does."""

    def isatty(self) -> bool:
        return True


def test_the_line_shows_fraction_counts_and_time():
    line = format_progress("exporting", 250, 1000, 1.5)
    assert line == "exporting  [######------------------]  25%  250/1,000  1.5s"
    assert format_progress("importing", 250, None, 1.5) == "importing  250  1.5s"
    assert "100%" in format_progress("x", 12, 10, 0.0)  # never past the end, even if total was low


def test_a_terminal_gets_throttled_redraws_and_a_final_newline():
    screen = Terminal()
    with ProgressBar("exporting", stream=screen, interval=60) as bar:
        for done in range(1001):
            bar(done, 1000)
    drawn = screen.getvalue()
    assert drawn.count("\r") == 2  # the first call, then the final state: not 1001 redraws
    assert "1,000/1,000" in drawn.rsplit("\r", 1)[-1]  # the last drawing is the final state
    assert drawn.endswith("\n") and "100%" in drawn


def test_silent_when_quiet_or_not_a_terminal():
    for bar in (ProgressBar("x", stream=Terminal(), quiet=True), ProgressBar("x", stream=io.StringIO())):
        with bar:
            bar(1, 2)
        assert bar.stream.getvalue() == ""


def test_nothing_drawn_means_no_stray_newline():
    screen = Terminal()
    with ProgressBar("x", stream=screen):
        pass
    assert screen.getvalue() == ""
