"""Fixtures shared by the test files: keep this small."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

# A shell that starts the tests in the background without job control makes them
# ignore Ctrl-C (SIGINT), and the processes they start would inherit that: the tests
# that interrupt a child would see it carry on. A handler here is reset to the
# default in every child, which Python then turns into KeyboardInterrupt.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """A database path that does not exist yet, under this test's own folder."""
    return tmp_path / "memories.db"


@pytest.fixture(scope="module")
def lexical_only() -> Iterator[None]:
    """Recall without an embedding model, for tests about storage rather than ranking.

    Sets ``MNEMOSYNE_EMBEDDER=none`` for one test module (child processes inherit it):
    results stay deterministic, and no model is loaded for each database opened.
    Use it with ``pytestmark = pytest.mark.usefixtures("lexical_only")``.
    """
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MNEMOSYNE_EMBEDDER", "none")
        yield
