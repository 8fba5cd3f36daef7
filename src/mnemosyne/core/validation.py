"""Argument checks shared by every entry point; each raises InvalidInputError."""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeGuard

import numpy as np

from ..errors import InvalidInputError, brief
from ..models import SCOPES

# recall ranks 5 * top_k candidates per signal; beyond this a ranking means nothing
# and the query only grows slow.
MAX_TOP_K = 10_000
# timeline(limit=None) returns every event; a number above this is almost surely a
# mistake (and above 2**63 SQLite cannot take it at all).
MAX_LIMIT = 1_000_000
# recall(context=N) attaches N events either side of each hit; past this it is no
# longer a hit's surroundings but a timeline (which has its own call).
MAX_CONTEXT = 50
# Far beyond any real use, and well inside what JSON parsing (and a later export and
# import) can take: near a thousand levels, Python's recursion limit breaks them.
MAX_METADATA_DEPTH = 100
# Room for any naming scheme in use (an agent, a user and a task joined, a UUID or
# two); a session id is written with every memory and read back with every recall,
# so a far longer one is a mistake, not a name.
MAX_SESSION_ID_LENGTH = 256


def finite_number(value: object) -> float | None:
    """``value`` as a finite float, or None for anything else (bools, NaN, ±inf,
    text, and ints too large for a float). NumPy's number types count: settings
    often come out of an array."""
    if not is_real(value):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def is_real(value: object) -> TypeGuard[numbers.Real]:
    """Whether ``value`` is a real number (NumPy's too), never a bool."""
    return isinstance(value, numbers.Real) and not _is_bool(value)


def whole_number(value: object) -> int | None:
    """``value`` as a plain int if it is an integer (NumPy's too, never a bool), else
    None. Plain, because SQLite cannot bind NumPy's integers."""
    if not isinstance(value, numbers.Integral) or _is_bool(value):
        return None
    return int(value)


def _is_bool(value: object) -> bool:
    # bool is an int to Python; both it and NumPy's bool_ are flags, not numbers.
    return isinstance(value, (bool, np.bool_))


def check_text(value: str, name: str) -> str:
    """Refuse text that UTF-8 cannot encode (lone surrogates, e.g. from a bad decode):
    SQLite and JSON could not store it, and the error would surface mid-write."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(
            f"{name} contains a lone surrogate {value[exc.start]!r} at position {exc.start}, "
            "which UTF-8 cannot store; decode the text with errors='replace' or remove it"
        ) from exc
    return value


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
    return check_text(content, "content")


def check_importance(importance: object) -> float:
    number = finite_number(importance)
    if number is None or not 0 <= number <= 1:
        raise InvalidInputError(f"importance must be a number in [0, 1], got {brief(importance)}")
    return number


def check_flag(value: object, name: str) -> bool:
    """A yes/no option: a bool, never a truthy stand-in ("false" is truthy)."""
    if not isinstance(value, (bool, np.bool_)):
        raise InvalidInputError(f"{name} must be True or False, got {brief(value)}")
    return bool(value)


def check_sources(source: object) -> tuple[str, ...]:
    """The sources a filter keeps: one source, or a non-empty list of them (an empty
    list would keep nothing, or silently everything)."""
    if source is None:
        return ()
    if isinstance(source, str):
        return (check_label(source, "source"),)
    if not isinstance(source, (list, tuple, set, frozenset)) or not source:
        raise InvalidInputError(f"source must be a source or a non-empty list of sources, got {brief(source)}")
    return tuple(check_label(s, "source") for s in source)


def check_scope(scope: object) -> str:
    if scope not in SCOPES:
        raise InvalidInputError(f"scope must be 'session' or 'global', got {brief(scope)}")
    return str(scope)


def check_label(value: object, name: str) -> str:
    """A short identifying string such as a source or a session id."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(f"{name} must be a non-empty string, got {brief(value)}")
    if "\x00" in value:
        raise InvalidInputError(f"{name} contains a NUL character")
    return check_text(value, name)


def check_session_id(value: object, held: Callable[[str], bool]) -> str:
    """A session id: a label of at most ``MAX_SESSION_ID_LENGTH`` characters, or a
    longer one the database already holds (``held``). Earlier releases took ids of any
    length, and the sessions they stored must still open after an upgrade; ``held`` is
    asked only past the limit, so a usual id costs no lookup.

    >>> check_session_id("website-redesign", held=lambda session_id: False)
    'website-redesign'
    """
    session_id = check_label(value, "session_id")
    if len(session_id) > MAX_SESSION_ID_LENGTH and not held(session_id):
        raise InvalidInputError(
            f"session_id is {len(session_id):_} characters long; the most is {MAX_SESSION_ID_LENGTH} "
            f"for a session the database does not already hold: {brief(session_id)}"
        )
    return session_id


def check_metadata(metadata: object, max_depth: int | None = MAX_METADATA_DEPTH) -> dict[str, Any]:
    """Metadata must be a JSON object whose content round-trips exactly, nested at
    most ``max_depth`` deep (None: as deep as JSON itself can go here, for metadata
    an older release stored deeper)."""
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise InvalidInputError(f"metadata must be a dict, got {type(metadata).__name__}")
    if max_depth is not None and _depth(metadata, max_depth) > max_depth:
        raise InvalidInputError(f"metadata is nested more than {max_depth} deep; flatten it")
    too_deep = "metadata is nested too deep to store; flatten it"
    try:
        text = json.dumps(dict(metadata), ensure_ascii=False, allow_nan=False)
    except RecursionError as exc:
        raise InvalidInputError(too_deep) from exc
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(
            f"metadata must be JSON-serialisable (str keys; str, number, bool, None, list, "
            f"dict values; no NaN): {exc}"
        ) from exc
    check_text(text, "metadata")
    try:
        loaded: dict[str, Any] = json.loads(text)
        same = loaded == metadata
    except RecursionError as exc:
        raise InvalidInputError(too_deep) from exc
    if not same:
        # e.g. int keys silently become strings, tuples become lists: refuse rather
        # than hand back something different from what was stored.
        raise InvalidInputError(
            "metadata would not round-trip through JSON unchanged (non-string keys or "
            "tuples?); use string keys and lists"
        )
    return loaded


def _depth(value: object, enough: int) -> int:
    """How deep dicts and lists nest in ``value`` (a scalar is 0), without recursion;
    past ``enough``, the walk stops."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        children = item.values() if isinstance(item, Mapping) else item if isinstance(item, list | tuple) else None
        if children is None:
            continue
        deepest = max(deepest, level)
        if level > enough:
            return level
        stack.extend((child, level + 1) for child in children)
    return deepest


def check_top_k(top_k: object) -> int:
    return check_whole(top_k, "top_k", 1, MAX_TOP_K)


def check_limit(limit: object) -> int | None:
    if limit is None:
        return None
    number = whole_number(limit)
    if number is None or not 1 <= number <= MAX_LIMIT:
        raise InvalidInputError(
            f"limit must be an integer from 1 to {MAX_LIMIT:_}, or None for every event, got {brief(limit)}"
        )
    return number


def check_whole(value: object, name: str, least: int, most: int) -> int:
    """An integer from ``least`` to ``most``, as a plain int."""
    number = whole_number(value)
    if number is None or not least <= number <= most:
        raise InvalidInputError(f"{name} must be an integer from {least:_} to {most:_}, got {brief(value)}")
    return number


def check_query(query: object) -> str:
    if not isinstance(query, str):
        raise InvalidInputError(f"query must be a string, got {type(query).__name__}")
    if not query.strip():
        raise InvalidInputError("query is empty; describe what you want to recall")
    return check_text(query, "query")


def check_seconds(value: object, name: str, *, positive: bool = False, maximum: float = math.inf) -> float:
    """A finite number of seconds: >= 0 (> 0 if ``positive``), at most ``maximum``."""
    seconds = finite_number(value)
    if seconds is None or seconds < 0 or (positive and seconds == 0) or seconds > maximum:
        bounds = "> 0" if positive else ">= 0"
        if maximum != math.inf:
            bounds += f" and <= {maximum:.0f}"
        raise InvalidInputError(f"{name} must be a finite number of seconds {bounds}, got {brief(value)}")
    return seconds


def expand_user(path: str | Path, name: str) -> Path:
    """``path`` with a leading ``~`` or ``~user`` expanded; an unknown user is an
    :class:`InvalidInputError`, not Python's ``RuntimeError``."""
    try:
        return Path(path).expanduser()
    except RuntimeError as exc:
        user = str(path)[1:].split("/", 1)[0]
        raise InvalidInputError(
            f"{name} {str(path)!r} starts with the home folder of a user {user!r} there is none of; "
            f"for a file of that name, write ./{path}"
        ) from exc
