"""``Memory``: the blocking HTTP client of the gateway's REST API (``/v1``), mem0-style calls.

    with Memory("http://127.0.0.1:8420", api_key="mk_...") as memory:
        memory.add("I prefer TypeScript.", user_id="alice")
        hits = memory.search("Which language?", user_id="alice", threshold=0.3)

Requests and answers are built and read by ``memoryd.http.calls``; this module only sends
them (``httpx.Client``), waits between retries and polls for ``add``'s read-your-writes.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import httpx

from memoryd.errors import DependencyDown
from memoryd.http import calls
from memoryd.http.calls import AddResult, BatchItemLike, Call, MessagesOrText, RetryPolicy
from memoryd.schemas.memory import (
    HistoryEntry,
    MemoryBatchResult,
    MemoryClearResult,
    MemoryCreateResult,
    MemoryDeleteResult,
    MemoryRecord,
    MemoryUpdateResult,
)
from memoryd.schemas.retrieval import RetrievedMemory, RetrieveResult


class Memory:
    """Blocking client of memoryd's REST API with one API key (``Authorization: Bearer``).

    ``user_id`` is the owner: an owner's key may leave it out (or name only its own owner; any
    other is ``Forbidden``); an operator key names it on every call. ``agent_id`` and ``run_id``
    (the session) are stored with what ``add`` remembers and narrow what ``search``, ``get_all``
    and ``delete_all`` reach to that agent or session. Errors are the typed errors
    of ``memoryd.errors``; 429 and 503 are retried as ``RetryPolicy`` says. ``httpx_options``
    go to ``httpx.Client`` (``transport``, ``verify``, ``event_hooks``, ...).
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = 30.0,
        max_retries: int = 3,
        max_retry_wait_s: float = 30.0,
        **httpx_options: Any,
    ) -> None:
        url, key = calls.target(base_url, api_key, os.environ)
        self.retry = RetryPolicy(max_retries=max_retries, max_wait_s=max_retry_wait_s)
        self._http = httpx.Client(
            base_url=url, headers={"authorization": f"Bearer {key}"}, timeout=timeout, **httpx_options
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _send(self, call: Call) -> Any:
        attempt = 0
        while True:
            try:
                response = self._http.request(call.method, call.path, params=call.query or None, json=call.body)
            except httpx.TransportError as exc:
                raise DependencyDown(f"{call.method} {call.path}: {type(exc).__name__}: {exc}") from exc
            retry_after = response.headers.get("retry-after")
            wait = self.retry.delay(response.status_code, retry_after, attempt)
            if wait is None:
                content_type = response.headers.get("content-type", "")
                return calls.result_of(call, response.status_code, content_type, response.content, retry_after)
            time.sleep(wait)
            attempt += 1

    # --- mem0-style calls ------------------------------------------------------------------------
    def add(
        self,
        messages: MessagesOrText,
        *,
        user_id: str | None = None,
        run_id: str | None = None,
        agent_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        wait: bool = True,
        timeout: float = 30.0,
    ) -> AddResult:
        """Remember a conversation (or one user message): publish it as a chat event, then (``wait``)
        return its memories once they can be read and searched; ``TimeoutError`` if that takes
        longer than ``timeout`` s. ``wait=False`` returns at once: ``wait_added(event_id)`` later."""
        published = self._send(
            calls.publish(messages, user_id=user_id, run_id=run_id, agent_id=agent_id, metadata=metadata)
        )
        if not wait:
            return AddResult(event_id=published.event_id)
        memories = self.wait_added(published.event_id, user_id=user_id, timeout=timeout)
        return AddResult(event_id=published.event_id, memories=memories)

    def wait_added(
        self, event_id: str, *, user_id: str | None = None, timeout: float = 30.0, interval: float = 0.1
    ) -> list[MemoryRecord]:
        """The memories of a chat event once it is processed and they have their vectors."""
        deadline = time.monotonic() + timeout
        while True:
            listing = self._send(calls.event_memories(event_id, user_id=user_id))
            if calls.event_settled(listing):
                return calls.owned_memories(listing)
            if time.monotonic() + interval > deadline:
                raise TimeoutError(calls.not_settled(event_id, listing, timeout))
            time.sleep(interval)

    def search(
        self,
        query: str,
        *,
        user_id: str | None = None,
        run_id: str | None = None,
        agent_id: str | None = None,
        filters: Mapping[str, Any] | None = None,
        threshold: float | None = None,
        limit: int = 20,
        **options: Any,
    ) -> list[RetrievedMemory]:
        """The memories most relevant to ``query``, best first; ``threshold`` drops those less
        relevant (see ``RetrieveRequest.threshold``); ``filters`` on metadata: ``{"k": "v"}``,
        ``{"k": {"in": [...]}}``, ``{"AND"|"OR": [...]}``; ``options`` as in ``RetrieveRequest``."""
        return self.retrieve(
            query,
            user_id=user_id,
            run_id=run_id,
            agent_id=agent_id,
            filters=filters,
            threshold=threshold,
            limit=limit,
            **options,
        ).memories

    def retrieve(
        self,
        query: str,
        *,
        user_id: str | None = None,
        run_id: str | None = None,
        agent_id: str | None = None,
        filters: Mapping[str, Any] | None = None,
        threshold: float | None = None,
        limit: int = 20,
        **options: Any,
    ) -> RetrieveResult:
        """``search`` with the whole answer: tiers, fallbacks, tokens used."""
        call = calls.search(
            query,
            user_id=user_id,
            run_id=run_id,
            agent_id=agent_id,
            limit=limit,
            threshold=threshold,
            filters=filters,
            **options,
        )
        result: RetrieveResult = self._send(call)
        return result

    def create(
        self,
        content: str,
        *,
        user_id: str | None = None,
        run_id: str | None = None,
        agent_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        memory_type: str = "factual",
        key: str | None = None,
        expires_at: datetime | None = None,
    ) -> MemoryCreateResult:
        """Store ``content`` as one memory as it is (no extraction); with ``key``, replace the memory of that key."""
        call = calls.create(
            content,
            user_id=user_id,
            run_id=run_id,
            agent_id=agent_id,
            metadata=metadata,
            memory_type=memory_type,
            key=key,
            expires_at=expires_at,
        )
        result: MemoryCreateResult = self._send(call)
        return result

    def add_batch(
        self,
        items: Sequence[BatchItemLike],
        *,
        user_id: str | None = None,
        run_id: str | None = None,
        agent_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> MemoryBatchResult:
        """Add many items in one request: a string (or ``{"content": ...}``) is stored as one memory
        as it is; ``{"messages": ...}`` is published as a chat event (stored and extracted later).
        Items are done one by one: ``results[i].error`` says why item ``i`` failed, the others
        are stored; ``run_id``, ``agent_id`` and ``metadata`` apply to items that set none."""
        call = calls.batch(items, user_id=user_id, run_id=run_id, agent_id=agent_id, metadata=metadata)
        result: MemoryBatchResult = self._send(call)
        return result

    def get(self, memory_id: str, *, user_id: str | None = None) -> MemoryRecord:
        result = self._send(calls.get(memory_id, user_id=user_id))
        memory: MemoryRecord = result.memory
        return memory

    def get_all(
        self,
        *,
        user_id: str | None = None,
        run_id: str | None = None,
        agent_id: str | None = None,
        memory_type: str | None = None,
        state: str | None = None,
        filters: Mapping[str, Any] | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[MemoryRecord]:
        """The owner's memories, newest first (``limit`` up to 1000, then ``offset``); ``filters``
        on their metadata as in ``search``."""
        call = calls.get_all(
            user_id=user_id,
            run_id=run_id,
            agent_id=agent_id,
            memory_type=memory_type,
            state=state,
            limit=limit,
            offset=offset,
            filters=filters,
        )
        memories: list[MemoryRecord] = self._send(call).memories
        return memories

    def update(
        self,
        memory_id: str,
        content: str | None = None,
        *,
        user_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        memory_type: str | None = None,
        expires_at: datetime | None = None,
    ) -> MemoryUpdateResult:
        """Change only what is given; the old text goes to ``history``."""
        call = calls.update(
            memory_id,
            user_id=user_id,
            content=content,
            metadata=metadata,
            memory_type=memory_type,
            expires_at=expires_at,
        )
        result: MemoryUpdateResult = self._send(call)
        return result

    def delete(self, memory_id: str, *, user_id: str | None = None) -> MemoryDeleteResult:
        """Delete from every store; the answer says what was removed where."""
        result: MemoryDeleteResult = self._send(calls.delete(memory_id, user_id=user_id))
        return result

    def delete_all(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        memory_type: str | None = None,
        older_than_days: int | None = None,
    ) -> MemoryClearResult:
        """Delete the owner's memories (of one agent, of one type, or older than some days); global ones stay."""
        call = calls.delete_all(
            user_id=user_id, agent_id=agent_id, memory_type=memory_type, older_than_days=older_than_days
        )
        result: MemoryClearResult = self._send(call)
        return result

    def history(self, memory_id: str, *, user_id: str | None = None, limit: int = 100) -> list[HistoryEntry]:
        """The memory's text changes, oldest first."""
        entries: list[HistoryEntry] = self._send(calls.history(memory_id, user_id=user_id, limit=limit)).entries
        return entries
