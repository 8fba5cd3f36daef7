"""Argument checks shared by every entry point; each raises InvalidInputError."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from ..errors import InvalidInputError
from ..models import SCOPES


def check_content(content: object) -> str:
    if not isinstance(content, str):
        raise InvalidInputError(
            f"content must be a string, got {type(content).__name__}; convert it with str() "
            "or json.dumps() first"
        )
    if not content.strip():
        raise InvalidInputError("content is empty; pass the text you want remembered")
    if "\x00" in content:
        raise InvalidInputError("content contains a NUL character; remove it before storing")
    return content


def check_importance(importance: object) -> float:
    if isinstance(importance, bool) or not isinstance(importance, (int, float)):
        raise InvalidInputError(f"importance must be a number in [0, 1], got {importance!r}")
    value = float(importance)
    if math.isnan(value) or not 0.0 <= value <= 1.0:
        raise InvalidInputError(f"importance must be in [0, 1], got {importance!r}")
    return value


def check_scope(scope: object) -> str:
    if scope not in SCOPES:
        raise InvalidInputError(f"scope must be 'session' or 'global', got {scope!r}")
    return str(scope)


def check_label(value: object, name: str) -> str:
    """A short identifying string such as a source or a session id."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(f"{name} must be a non-empty string, got {value!r}")
    if "\x00" in value:
        raise InvalidInputError(f"{name} contains a NUL character")
    return value


def check_metadata(metadata: object) -> dict[str, Any]:
    """Metadata must be a JSON object whose content round-trips exactly."""
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise InvalidInputError(f"metadata must be a dict, got {type(metadata).__name__}")
    try:
        text = json.dumps(dict(metadata), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(
            f"metadata must be JSON-serialisable (str keys; str, number, bool, None, list, "
            f"dict values; no NaN): {exc}"
        ) from exc
    loaded: dict[str, Any] = json.loads(text)
    if loaded != metadata:
        # e.g. int keys silently become strings, tuples become lists: refuse rather
        # than hand back something different from what was stored.
        raise InvalidInputError(
            "metadata would not round-trip through JSON unchanged (non-string keys or "
            "tuples?); use string keys and lists"
        )
    return loaded


def check_top_k(top_k: object) -> int:
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise InvalidInputError(f"top_k must be an integer >= 1, got {top_k!r}")
    return top_k


def check_query(query: object) -> str:
    if not isinstance(query, str):
        raise InvalidInputError(f"query must be a string, got {type(query).__name__}")
    if not query.strip():
        raise InvalidInputError("query is empty; describe what you want to recall")
    return query


def check_seconds(value: object, name: str) -> float:
    """A finite, non-negative number of seconds."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) \
            or math.isinf(value) or value < 0:
        raise InvalidInputError(f"{name} must be a number of seconds >= 0, got {value!r}")
    return float(value)
