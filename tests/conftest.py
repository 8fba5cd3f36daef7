"""Fixtures shared by the test files: keep this small."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


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
