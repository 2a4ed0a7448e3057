"""What the HTTP clients send and how they read the answer, without any I/O.

``Memory`` and ``AsyncMemory`` differ only in how they wait; every request they make is a
``Call`` built here (method, path, query, body, the result Struct), every answer goes through
``result_of`` (a success decoded into that Struct; ``application/problem+json`` raised as the
typed error of ``memoryd.errors``), and ``retry_after`` decides whether a 429 or 503 is retried.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import msgspec

from memoryd.batch_items import BatchItemLike, batch_items
from memoryd.errors import ConfigError, MemorydError, ValidationFailed, error_for
from memoryd.schemas.events import ChatMessage
from memoryd.schemas.memory import (
    MemoryBatchResult,
    MemoryClearResult,
    MemoryCreateResult,
    MemoryDeleteResult,
    MemoryGetResult,
    MemoryHistoryResult,
    MemoryListResult,
    MemoryRecord,
    MemoryUpdateResult,
)
from memoryd.schemas.retrieval import RetrieveResult

MessageLike = ChatMessage | Mapping[str, Any]
MessagesOrText = str | Sequence[MessageLike]

#: Statuses retried (after ``Retry-After`` when the answer gives one).
RETRIED = (429, 503)
#: The most an event's listing asks for at once (the gateway's limit).
EVENT_PAGE = 1000

_any = msgspec.json.Decoder()


@dataclass(frozen=True)
class Call:
    """One REST request: ``query`` goes in the URL, ``body`` as JSON; ``result`` decodes the answer."""

    method: str
    path: str
    result: type[Any]
    query: dict[str, Any] = field(default_factory=dict)
    body: dict[str, Any] | None = None


def _owner(user_id: str | None) -> dict[str, Any]:
    return {} if user_id is None else {"owner": user_id}


def _clean(values: Mapping[str, Any]) -> dict[str, Any]:
    """The values that are set, as JSON-ready builtins (a query string carries no nulls)."""
    return {k: msgspec.to_builtins(v) for k, v in values.items() if v is not None}


def _query(values: Mapping[str, Any]) -> dict[str, Any]:
    """Query-string values: booleans as ``true``/``false``, as the gateway reads them."""
    return {k: ("true" if v else "false") if isinstance(v, bool) else v for k, v in _clean(values).items()}


def messages_of(messages: MessagesOrText) -> list[dict[str, Any]]:
    """Chat messages as the gateway takes them; plain text is one user message."""
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    out = []
    for i, m in enumerate(messages):
        try:
            message = m if isinstance(m, ChatMessage) else msgspec.convert(dict(m), ChatMessage)
        except (msgspec.ValidationError, TypeError, ValueError) as exc:
            raise ValidationFailed(str(exc).replace("`$", f"`$.messages[{i}]"), f"$.messages[{i}]") from exc
        out.append(msgspec.to_builtins(message))
    if not out:
        raise ValidationFailed.at("$.messages", "at least one message is needed")
    return out


# --- the calls -----------------------------------------------------------------------------------
class PublishResult(msgspec.Struct, frozen=True, kw_only=True):
    event_id: str


def publish(
    messages: MessagesOrText,
    *,
    user_id: str | None,
    run_id: str | None,
    metadata: Mapping[str, Any] | None,
    event_id: str | None = None,
    agent_id: str | None = None,
) -> Call:
    """``POST /v1/events``; the event id is chosen here, so a retried publish is stored once."""
    body = {
        "messages": messages_of(messages),
        "event_id": event_id or uuid.uuid4().hex,
        "metadata": dict(metadata or {}),
        **_clean({"owner": user_id, "session_id": run_id, "agent_id": agent_id}),
    }
    return Call("POST", "/v1/events", PublishResult, body=body)


def event_memories(event_id: str, *, user_id: str | None) -> Call:
    """What one chat event stored, and whether it is fully processed."""
    query = _query({"event_id": event_id, "limit": EVENT_PAGE, **_owner(user_id)})
    return Call("GET", "/v1/memories", MemoryListResult, query=query)


def event_settled(listing: MemoryListResult) -> bool:
    """An event's memories are there to read: it is processed and each of its memories has its
    vector (so vector search finds them too)."""
    return bool(listing.event_processed) and all(
        m.embedding_signature is not None and not m.needs_reindex for m in listing.memories
    )


def search(
    query: str,
    *,
    user_id: str | None,
    run_id: str | None,
    limit: int,
    threshold: float | None,
    filters: Mapping[str, Any] | None,
    agent_id: str | None = None,
    **options: Any,
) -> Call:
    body = _clean(
        {"query": query, "session_id": run_id, "agent_id": agent_id, "limit": limit, "threshold": threshold, **options}
    )
    if filters:
        body["filters"] = dict(filters)
    return Call("POST", "/v1/search", RetrieveResult, body={**body, **_owner(user_id)})


def batch(
    items: Sequence[BatchItemLike],
    *,
    user_id: str | None,
    run_id: str | None,
    metadata: Mapping[str, Any] | None,
    agent_id: str | None = None,
) -> Call:
    """``POST /v1/memories/batch`` (the items as ``memoryd.batch_items`` makes them)."""
    body_items = batch_items(items, session_id=run_id, agent_id=agent_id, metadata=metadata)
    return Call("POST", "/v1/memories/batch", MemoryBatchResult, body={"items": body_items} | _owner(user_id))


def get(memory_id: str, *, user_id: str | None) -> Call:
    return Call("GET", f"/v1/memories/{_id(memory_id)}", MemoryGetResult, query=_query(_owner(user_id)))


def get_all(
    *,
    user_id: str | None,
    run_id: str | None,
    memory_type: str | None,
    state: str | None,
    limit: int,
    offset: int,
    filters: Mapping[str, Any] | None = None,
    agent_id: str | None = None,
) -> Call:
    query = _query(
        {
            "session_id": run_id,
            "agent_id": agent_id,
            "memory_type": memory_type,
            "state": state,
            "limit": limit,
            "offset": offset,
        }
        | _owner(user_id)
    )
    if filters:
        query["filters"] = msgspec.json.encode(dict(filters)).decode()
    return Call("GET", "/v1/memories", MemoryListResult, query=query)


def create(
    content: str,
    *,
    user_id: str | None,
    run_id: str | None,
    metadata: Mapping[str, Any] | None,
    memory_type: str,
    key: str | None,
    expires_at: datetime | None,
    agent_id: str | None = None,
) -> Call:
    body = _clean(
        {
            "content": content,
            "session_id": run_id,
            "agent_id": agent_id,
            "metadata": dict(metadata or {}),
            "memory_type": memory_type,
            "key": key,
            "expires_at": expires_at,
        }
    )
    return Call("POST", "/v1/memories", MemoryCreateResult, body=body | _owner(user_id))


def update(
    memory_id: str,
    *,
    user_id: str | None,
    content: str | None,
    metadata: Mapping[str, Any] | None,
    memory_type: str | None,
    expires_at: datetime | None,
) -> Call:
    body = _clean(
        {
            "content": content,
            "metadata": None if metadata is None else dict(metadata),
            "memory_type": memory_type,
            "expires_at": expires_at,
        }
    )
    return Call("PATCH", f"/v1/memories/{_id(memory_id)}", MemoryUpdateResult, body=body | _owner(user_id))


def delete(memory_id: str, *, user_id: str | None) -> Call:
    return Call("DELETE", f"/v1/memories/{_id(memory_id)}", MemoryDeleteResult, query=_query(_owner(user_id)))


def delete_all(
    *, user_id: str | None, memory_type: str | None, older_than_days: int | None, agent_id: str | None = None
) -> Call:
    body = _clean({"memory_type": memory_type, "older_than_days": older_than_days, "agent_id": agent_id})
    body |= _owner(user_id)
    return Call("POST", "/v1/memories/clear", MemoryClearResult, body=body)


def history(memory_id: str, *, user_id: str | None, limit: int) -> Call:
    query = _query({"limit": limit, **_owner(user_id)})
    return Call("GET", f"/v1/memories/{_id(memory_id)}/history", MemoryHistoryResult, query=query)


def _id(memory_id: str) -> str:
    """A memory id as one path segment (anything else is the gateway's 400, not another route)."""
    if not isinstance(memory_id, str) or not memory_id or "/" in memory_id or memory_id in (".", ".."):
        raise ValidationFailed.at("$.id", f"not a memory id: {memory_id!r}")
    return memory_id


# --- the answers ---------------------------------------------------------------------------------
def result_of(call: Call, status: int, content_type: str, body: bytes, retry_after_header: str | None) -> Any:
    """The call's result Struct, or raise the typed error the answer says."""
    if 200 <= status < 300:
        try:
            return msgspec.json.decode(body, type=call.result)
        except msgspec.DecodeError as exc:
            raise error_for(502, "bad_reply", f"{call.method} {call.path}: unreadable answer: {exc}") from None
    raise error_of(status, content_type, body, retry_after_header)


def error_of(status: int, content_type: str, body: bytes, retry_after_header: str | None) -> MemorydError:
    """The typed error of a non-2xx answer (``application/problem+json`` or anything else)."""
    problem: Any = None
    if content_type.split(";")[0].strip() in ("application/problem+json", "application/json"):
        try:
            problem = _any.decode(body)
        except msgspec.DecodeError:
            problem = None
    if isinstance(problem, dict):
        detail = str(problem.get("detail") or problem.get("title") or f"HTTP {status}")
        err_code = str(problem.get("err_code") or "")
        field_path = problem.get("field")
        error_id = problem.get("error_id")
    else:
        detail = body[:300].decode("utf-8", errors="replace").strip() or f"HTTP {status}"
        err_code, field_path, error_id = "", None, None
    if status == 429 and not err_code:
        err_code = "rate_limited"
    return error_for(
        status,
        err_code,
        detail,
        error_id=error_id if isinstance(error_id, str) else None,
        retry_after_s=parse_retry_after(retry_after_header),
        field=field_path if isinstance(field_path, str) else None,
    )


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """``Retry-After`` in seconds: delta seconds or an HTTP date (None: absent or unreadable)."""
    if value is None or not value.strip():
        return None
    try:
        return max(0.0, float(value.strip()))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


@dataclass(frozen=True)
class RetryPolicy:
    """429 and 503 are retried ``max_retries`` times: after ``Retry-After`` when the answer gives
    one (if it asks for more than ``max_wait_s``, the error is raised at once), else after a
    doubling backoff from ``backoff_s``."""

    max_retries: int = 3
    max_wait_s: float = 30.0
    backoff_s: float = 0.5

    def delay(self, status: int, retry_after_header: str | None, attempt: int) -> float | None:
        """Seconds to wait before retry number ``attempt + 1`` (0-based), or None: do not retry."""
        if status not in RETRIED or attempt >= self.max_retries:
            return None
        asked = parse_retry_after(retry_after_header)
        if asked is None:
            return min(self.backoff_s * 2**attempt, self.max_wait_s)
        return asked if asked <= self.max_wait_s else None


def owned_memories(listing: MemoryListResult) -> list[MemoryRecord]:
    """An event's memories, oldest first (turns in conversation order, then the facts)."""
    return sorted(listing.memories, key=lambda m: (m.created_at, m.id))


class AddResult(msgspec.Struct, frozen=True, kw_only=True):
    """What ``add`` stored: the chat event's id and its memories (the turns, then the facts
    extracted from them); ``memories`` is empty when ``add`` did not wait."""

    event_id: str
    memories: list[MemoryRecord] = []


DEFAULT_URL = "http://127.0.0.1:8420"


def target(base_url: str | None, api_key: str | None, environ: Mapping[str, str]) -> tuple[str, str]:
    """The gateway URL and API key: the arguments, else ``$MEMORYD_URL`` / ``$MEMORYD_KEY``
    (the URL defaults to a local gateway); no key is a ``ConfigError``."""
    url = base_url or environ.get("MEMORYD_URL") or DEFAULT_URL
    key = api_key or environ.get("MEMORYD_KEY")
    if not key:
        raise ConfigError("MEMORYD_KEY", "an API key is needed (api_key=..., or `memoryd keys create`)")
    if not url.startswith(("http://", "https://")):
        raise ConfigError("MEMORYD_URL", f"not an http(s) URL: {url!r}")
    return url.rstrip("/"), key


def not_settled(event_id: str, listing: MemoryListResult, timeout: float) -> str:
    """Why ``add`` stopped waiting for an event."""
    if not listing.event_processed:
        return f"event {event_id} was not processed within {timeout} s (is the ingest/extract service running?)"
    waiting = sum(1 for m in listing.memories if m.embedding_signature is None or m.needs_reindex)
    return f"{waiting} memories of event {event_id} had no vector after {timeout} s (is the embed service running?)"
