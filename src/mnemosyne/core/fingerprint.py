"""Content fingerprints for spotting the same text stored twice."""

from __future__ import annotations

import hashlib


def content_hash(content: str) -> str:
    """SHA-256 of the text with case and whitespace runs normalised.

    "Deploy on Friday" and "deploy  on friday\\n" share a fingerprint, so retried or
    re-stated writes can be recognised as duplicates.
    """
    normalised = " ".join(content.split()).casefold()
    return hashlib.sha256(normalised.encode()).hexdigest()


def same_text(a: str, b: str) -> bool:
    """Whether two texts are one but for spacing: what a retried or repeated write
    sends. Case counts here, though not in the fingerprint: "Password: Hunter2" is
    not "Password: hunter2"."""
    return a.split() == b.split()
