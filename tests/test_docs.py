"""docs/api.md documents every public name, method and parameter; the other docs exist."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import mnemosyne
from mnemosyne import Mnemosyne
from mnemosyne.dr import recovery

DOCS = Path(__file__).resolve().parents[1] / "docs"
API = (DOCS / "api.md").read_text(encoding="utf-8")


def sections() -> dict[str, str]:
    """Heading line -> the text under it, up to the next heading."""
    parts = re.split(r"^(#{2,4} .*)$", API, flags=re.M)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def section_of(title: str) -> str:
    """The section whose heading names `title` (as `title(...)` or `title`)."""
    found = [body for heading, body in sections().items()
             if re.search(rf"`{re.escape(title)}(\(|`)", heading)]
    assert found, f"docs/api.md has no heading for `{title}`"
    return found[0]


def documented_in_a_table(name: str) -> bool:
    return re.search(rf"^\| `{re.escape(name)}` \|", API, flags=re.M) is not None


def check_parameters(title: str, function: object) -> None:
    body = section_of(title)
    for name in inspect.signature(function).parameters:
        if name == "self":
            continue
        assert f"`{name}`" in body, f"docs/api.md: `{title}` does not describe its parameter `{name}`"


def test_every_public_name_is_documented():
    for name in mnemosyne.__all__:
        if documented_in_a_table(name):
            continue
        section_of(name)


def test_every_public_method_and_parameter_is_documented():
    members = inspect.getmembers(Mnemosyne, inspect.isfunction)
    methods = [name for name, _ in members if not name.startswith("_")]
    assert {"remember", "recall", "get", "update", "forget", "get_stats"} <= set(methods)
    check_parameters("Mnemosyne", Mnemosyne.__init__)
    for name in methods:
        check_parameters(f"Mnemosyne.{name}", getattr(Mnemosyne, name))
    for name in ("remember", "recall", "get_stats"):
        check_parameters(name, getattr(mnemosyne, name))


def test_the_backup_functions_are_documented():
    for name in ("create_backup", "verify_backup", "restore_backup"):
        check_parameters(name, getattr(recovery, name))
    section_of("BackupManifest")


def test_every_error_code_is_documented():
    for name in mnemosyne.__all__:
        error = getattr(mnemosyne, name)
        if isinstance(error, type) and issubclass(error, mnemosyne.MnemosyneError):
            assert re.search(rf"^\| `{name}` \| `{error.code}` \|", API, flags=re.M), name


def test_the_guides_exist_and_link_up():
    for guide in ("concepts.md", "operations.md", "api.md"):
        text = (DOCS / guide).read_text(encoding="utf-8")
        assert text.startswith("# ") and len(text) > 1500, guide
    readme = (DOCS.parent / "README.md").read_text(encoding="utf-8")
    for guide in ("docs/concepts.md", "docs/operations.md", "docs/api.md"):
        assert f"({guide})" in readme, f"README does not link {guide}"
