"""A batch add's items as ``memory.batch`` takes them, for both clients (HTTP and NATS): pure.

A string is one memory's content; a mapping is a ``BatchItem`` (``content``, or ``messages`` as a
string or chat messages). The session, agent and metadata given for the whole batch apply to the
items that set none; each messages item gets an event id here, so a retried batch publishes it once.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from memoryd.errors import ValidationFailed

BatchItemLike = str | Mapping[str, Any]


def batch_items(
    items: Sequence[BatchItemLike],
    *,
    session_id: str | None = None,
    agent_id: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """The items as JSON-ready ``BatchItem`` fields (``ValidationFailed`` at the bad item's path)."""
    if isinstance(items, str | bytes) or not isinstance(items, Sequence):
        raise ValidationFailed.at("$.items", "a list of texts or items is needed")
    out_items = []
    for i, item in enumerate(items):
        if isinstance(item, str):
            item = {"content": item}
        if not isinstance(item, Mapping):
            raise ValidationFailed.at(f"$.items[{i}]", f"not a text or an item: {type(item).__name__}")
        out = {k: msgspec.to_builtins(v) for k, v in item.items() if v is not None}
        if isinstance(out.get("messages"), str):
            out["messages"] = [{"role": "user", "content": out["messages"]}]
        if "messages" in out:
            out.setdefault("event_id", uuid.uuid4().hex)
        for name, value in (("session_id", session_id), ("agent_id", agent_id)):
            if value is not None:
                out.setdefault(name, value)
        if metadata:
            out.setdefault("metadata", dict(metadata))
        out_items.append(out)
    return out_items
