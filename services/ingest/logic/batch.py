"""Pure rules of ``memory.batch`` (no I/O): what each item is, the fields of the request or
event it becomes, and its error placed at the item's path.

A content item's fields are decoded as a ``MemoryCreateRequest`` and a messages item's as a
``ChatEvent`` (by the handler, with the codec), so an item is refused for exactly what
``memory.create`` or a chat event would be refused for.
"""

from __future__ import annotations

import re
import uuid
from datetime import datetime
from typing import Any

from memoryd.errors import ValidationFailed
from memoryd.schemas.memory import (
    BatchItem,
    BatchItemError,
    BatchItemResult,
    MemoryBatchResult,
)
from memoryd.schemas.ops import RpcError

_AT_PATH = re.compile(r" - at `(\$[^`]*)`$")


def item_path(index: int) -> str:
    return f"$.items[{index}]"


def _kind(item: BatchItem, index: int) -> str:
    if (item.content is None) == (item.messages is None):
        raise ValidationFailed.at(item_path(index), "an item has either `content` or `messages`, not both or neither")
    return "content" if item.content is not None else "messages"


def is_content(item: BatchItem, index: int) -> bool:
    """True for a content item, False for a messages item; ``ValidationFailed`` for neither or both."""
    return _kind(item, index) == "content"


def _set(values: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


def create_fields(owner: str, item: BatchItem) -> dict[str, Any]:
    """The ``MemoryCreateRequest`` fields of a content item."""
    fields = _set(
        {
            "content": item.content,
            "memory_type": item.memory_type,
            "key": item.key,
            "session_id": item.session_id,
            "agent_id": item.agent_id,
            "expires_at": item.expires_at,
        }
    )
    return {"owner": owner, "metadata": item.metadata, **fields}


def event_fields(owner: str, item: BatchItem, now: datetime) -> dict[str, Any]:
    """The ``ChatEvent`` fields of a messages item (its ``event_id``, else a new one);
    ``memory_type``, ``key`` and ``expires_at`` are for content items only."""
    for name in ("memory_type", "key", "expires_at"):
        if getattr(item, name) is not None:
            raise ValidationFailed.at(f"$.{name}", f"`{name}` applies to content items, not to messages")
    fields = _set({"session_id": item.session_id, "agent_id": item.agent_id})
    return {
        "event_id": item.event_id or uuid.uuid4().hex,
        "owner": owner,
        "messages": item.messages,
        "occurred_at": now,
        "metadata": item.metadata,
        **fields,
    }


def _at_item(path: str, index: int) -> str:
    """``$.content`` -> ``$.items[3].content`` (an item's path is already placed)."""
    if path.startswith(item_path(index)):
        return path
    return item_path(index) + path[1:]


def item_error(reply: RpcError, index: int) -> BatchItemError:
    """The error of item ``index``, its field path placed within the batch request."""
    description, field = reply.description, reply.field
    if field is None and (named := _AT_PATH.search(description)) is not None:
        field = named.group(1)  # an error that names its path only in its text
    if field is not None:
        placed = _at_item(field, index)
        description = description.replace(f"`{field}`", f"`{placed}`")
        field = placed
    return BatchItemError(
        code=reply.code, err_code=reply.err_code, description=description, field=field, error_id=reply.error_id
    )


def batch_result(results: list[BatchItemResult]) -> MemoryBatchResult:
    """The reply: the item results with ``stored``, ``published`` and ``failed`` counted."""
    return MemoryBatchResult(
        results=results,
        stored=sum(1 for r in results if r.memory is not None),
        published=sum(1 for r in results if r.event_id is not None),
        failed=sum(1 for r in results if r.error is not None),
    )
