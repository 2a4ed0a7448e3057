"""Text that storage refuses, found before a message is accepted: every door and ingest ask here."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def nul_path(value: Any, path: str = "$") -> str | None:
    """The path of the first string (or mapping key) in ``value`` (decoded JSON or builtins) holding
    U+0000, which PostgreSQL cannot store; None when there is none."""
    if isinstance(value, str):
        return path if "\x00" in value else None
    items = value.items() if isinstance(value, Mapping) else enumerate(value) if isinstance(value, list | tuple) else ()
    for key, item in items:
        where = f"{path}.{key}" if isinstance(key, str) else f"{path}[{key}]"
        if isinstance(key, str) and "\x00" in key:
            return where
        found = nul_path(item, where)
        if found:
            return found
    return None
