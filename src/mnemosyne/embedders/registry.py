"""Choosing an embedder: by argument, then environment, then the best one installed.

Specs are short strings: ``"local"`` (the bundled MiniLM model), ``"none"`` (lexical
only), ``"sentence-transformers:<model or path>"``, ``"openai:<model>"`` (any
OpenAI-compatible endpoint; see ``openai_compat``). ``MNEMOSYNE_EMBEDDER`` holds a
spec. A database remembers the embedder that made its vectors; see ``signature``.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from typing import Any

from ..core.signature import same_embedder
from ..errors import InvalidInputError, MissingDependencyError
from .base import Embedder

__all__ = [
    "best_installed_spec", "built_here", "describe", "from_spec", "names_a_kind", "requested_spec", "same_embedder",
    "signature", "spec_of",
]

ENV_VAR = "MNEMOSYNE_EMBEDDER"
NONE = "none"
KINDS = frozenset({NONE, "local", "sentence-transformers", "openai"})


def from_spec(spec: str) -> Embedder | None:
    """Build the embedder a spec names (``None`` for ``"none"``)."""
    kind, _, model = spec.partition(":")
    kind, model = kind.strip().lower(), model.strip()
    if kind in (NONE, "local") and model:  # "local:all-mpnet-base-v2" is not the bundled model
        raise InvalidInputError(
            f"embedder {spec!r}: {kind!r} takes no model name; for another model use "
            f"'sentence-transformers:<model>' or 'openai:<model>'"
        )
    if kind == NONE:
        return None
    if kind == "local":
        return _shared_local_model()
    if kind == "sentence-transformers" and model:
        from .sentence_transformers import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder(model)
    if kind == "openai" and model:
        from .openai_compat import OpenAICompatibleEmbedder

        return OpenAICompatibleEmbedder(model)
    raise InvalidInputError(
        f"unknown embedder {spec!r}; use 'local', 'none', 'sentence-transformers:<model>' "
        "or 'openai:<model>'"
    )


def built_here(embedder: Embedder) -> bool:
    """Whether ``embedder``'s spec builds it again: one of the kinds ``from_spec``
    builds (not a caller's own object, whatever name it gives itself), calling the
    endpoint a spec's would (not one given to it alone)."""
    if not type(embedder).__module__.startswith(f"{__package__}."):
        return False
    address = getattr(embedder, "base_url", None)
    if address is None:
        return True
    from .openai_compat import configured_base_url

    return bool(address == configured_base_url())


@functools.lru_cache(maxsize=1)
def _shared_local_model() -> Embedder:
    """One copy of the bundled model per process: every Mnemosyne instance (an MCP
    server holds one per session) shares its memory and its load time."""
    try:
        from .local import LocalEmbedder
    except ImportError as exc:
        raise MissingDependencyError("the local embedding model", "local") from exc
    return LocalEmbedder()


def names_a_kind(spec: str) -> bool:
    """Whether ``spec`` is of a kind this registry builds (not a custom embedder's name)."""
    return spec.partition(":")[0].strip().lower() in KINDS


def requested_spec() -> str | None:
    """The spec from ``MNEMOSYNE_EMBEDDER``, if set."""
    value = os.environ.get(ENV_VAR, "").strip()
    return value or None


def best_installed_spec() -> str:
    """``"local"`` when its extra is installed, else ``"none"``."""
    has_runtime = all(importlib.util.find_spec(m) is not None for m in ("onnxruntime", "tokenizers"))
    return "local" if has_runtime else NONE


def signature(embedder: Embedder | None) -> dict[str, Any]:
    """What a database records about the embedder that made its vectors."""
    if embedder is None:
        return {"name": NONE, "model": NONE, "dimension": 0}
    return {"name": embedder.name, "model": embedder.model, "dimension": embedder.dimension or 0}


def spec_of(recorded: dict[str, Any]) -> str:
    """The spec that rebuilds a recorded embedder (``"local"``, ``"openai:<model>"``...)."""
    name = recorded.get("name", NONE)
    if name in (NONE, "local"):
        return name
    return f"{name}:{recorded.get('model', '')}"


def describe(recorded: dict[str, Any]) -> str:
    if recorded.get("name", NONE) == NONE:
        return NONE
    return f"{recorded['name']}:{recorded['model']} ({recorded.get('dimension') or '?'} dims)"
