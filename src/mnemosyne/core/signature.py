"""Comparing embedder signatures (what a database records about its vectors)."""

from __future__ import annotations

from typing import Any


def same_embedder(recorded: dict[str, Any], current: dict[str, Any]) -> bool:
    """Whether two signatures describe interchangeable vectors.

    An unknown dimension (an HTTP embedder before its first call) matches any.
    """
    if (recorded.get("name"), recorded.get("model")) != (current.get("name"), current.get("model")):
        return False
    return not recorded.get("dimension") or not current.get("dimension") or (
        recorded["dimension"] == current["dimension"]
    )
