"""Qdrant payloads and filters that mirror the pgvector adapter's SQL filters.

A point's payload carries what search filters on (``owner``, ``session_id``, ``agent_id``, ``scope``,
``state``, ``memory_type``, ``created_at`` and ``expires_at`` as epoch seconds or null)
plus ``embedded_at`` (when the vector was written: the ``since`` cut-off of ``neighbours``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from qdrant_client import models

from .common import epoch
from .port import VectorItem, VectorQuery

#: Payload fields with an index (``owner`` is the tenant key).
PAYLOAD_INDEXES: dict[str, Any] = {
    "owner": models.KeywordIndexParams(type=models.KeywordIndexType.KEYWORD, is_tenant=True),
    "session_id": models.PayloadSchemaType.KEYWORD,
    "agent_id": models.PayloadSchemaType.KEYWORD,
    "state": models.PayloadSchemaType.KEYWORD,
    "scope": models.PayloadSchemaType.KEYWORD,
    "memory_type": models.PayloadSchemaType.KEYWORD,
    "created_at": models.PayloadSchemaType.FLOAT,
    "expires_at": models.PayloadSchemaType.FLOAT,
}


def payload(item: VectorItem, now: float | None = None) -> dict[str, Any]:
    """The filter payload of one vector (``created_at`` defaults to now)."""
    written = time.time() if now is None else now
    created = epoch(item.created_at)
    return {
        "owner": item.owner,
        "session_id": item.session_id,
        "agent_id": item.agent_id,
        "scope": item.scope,
        "state": item.state,
        "memory_type": item.memory_type,
        "created_at": written if created is None else created,
        "expires_at": epoch(item.expires_at),
        "embedded_at": written,
    }


def _eq(key: str, value: str) -> models.FieldCondition:
    return models.FieldCondition(key=key, match=models.MatchValue(value=value))


def alive(now: datetime | None = None) -> list[models.Condition]:
    """``state = 'active'`` and not expired at ``now`` (default: the current time)."""
    cutoff = time.time() if now is None else epoch(now)
    return [
        _eq("state", "active"),
        models.Filter(
            should=[
                models.IsEmptyCondition(is_empty=models.PayloadField(key="expires_at")),
                models.FieldCondition(key="expires_at", range=models.Range(gt=cutoff)),
            ]
        ),
    ]


def visible(query: VectorQuery) -> models.Filter:
    """What ``query.owner`` may see: its own (session- and agent-filtered) memories or global ones."""
    own: list[models.Condition] = [_eq("owner", query.owner)]
    if query.session_id is not None:
        own.append(_eq("session_id", query.session_id))
    if query.agent_id is not None:
        own.append(_eq("agent_id", query.agent_id))
    must: list[models.Condition] = alive(query.now)
    if query.include_global:
        must.append(models.Filter(should=[models.Filter(must=own), _eq("scope", "global")]))
    else:
        must.extend(own)
    if query.created_after is not None:
        must.append(models.FieldCondition(key="created_at", range=models.Range(gt=epoch(query.created_after))))
    if query.types is not None:
        must.append(models.FieldCondition(key="memory_type", match=models.MatchAny(any=list(query.types))))
    return models.Filter(must=must)


def owner_alive(owner: str) -> models.Filter:
    """The owner's own active, unexpired points (no global ones of others): for ``neighbours``."""
    return models.Filter(must=[_eq("owner", owner), *alive()])


def owner_ids(owner: str, ids: Sequence[str]) -> models.Filter:
    """These point ids, only if they belong to ``owner``."""
    return models.Filter(must=[models.HasIdCondition(has_id=list(ids)), _eq("owner", owner)])


def patch(fields: dict[str, Any]) -> dict[str, Any]:
    """Payload values for changed memory fields (datetimes as epoch seconds)."""
    return {k: epoch(v) if isinstance(v, datetime) else v for k, v in fields.items()}
