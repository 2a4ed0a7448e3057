"""The digest that names a query text in the query-vector caches (pure: stdlib only)."""

from __future__ import annotations

import hashlib


def text_digest(text: str, owner: str | None = None) -> str:
    """sha256 of a query text (lone surrogates kept); with ``owner``, of the owner and the text,
    so that one tenant's cache entry never answers another."""
    scoped = text if owner is None else f"{owner}\x00{text}"
    return hashlib.sha256(scoped.encode("utf-8", "surrogatepass")).hexdigest()
