"""The memory API of ``MemoryClient`` over NATS: create, read, change, delete, list, history,
batch add, export and import of an owner's memories, one RPC each (``memory.*``).

``MemoryCalls`` is a part of ``MemoryClient`` (``memoryd.client``), which sends the requests; the
method names and answers follow ``memoryd.Memory`` (the HTTP client) where the two overlap.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import msgspec

from memoryd.batch_items import BatchItemLike, batch_items
from memoryd.codec import validation_failed
from memoryd.schemas.memory import (
    HistoryEntry,
    ImportLineError,
    MemoryBatchRequest,
    MemoryBatchResult,
    MemoryClearRequest,
    MemoryClearResult,
    MemoryCreateRequest,
    MemoryCreateResult,
    MemoryDeleteRequest,
    MemoryDeleteResult,
    MemoryExportRequest,
    MemoryExportResult,
    MemoryGetRequest,
    MemoryGetResult,
    MemoryHistoryRequest,
    MemoryHistoryResult,
    MemoryImportRequest,
    MemoryImportResult,
    MemoryListRequest,
    MemoryListResult,
    MemoryRecord,
    MemoryRestoreRequest,
    MemoryRestoreResult,
    MemoryUpdateRequest,
    MemoryUpdateResult,
)

#: Imports are sent in requests of at most this many bytes of lines (well under the payload limit).
IMPORT_CHUNK_BYTES = 2 * 1024 * 1024


class MemoryCalls:
    """The ``memory.*`` calls; ``_call`` (the client's) sends one RPC and returns its result."""

    timeout: float
    _call: Callable[..., Awaitable[Any]]

    async def create(
        self,
        owner: str,
        content: str,
        *,
        memory_type: str = "factual",
        key: str | None = None,
        session_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        expires_at: datetime | None = None,
        scope: str = "apiKey",
        agent_id: str | None = None,
    ) -> MemoryCreateResult:
        req = MemoryCreateRequest(
            owner=owner,
            content=content,
            memory_type=memory_type,  # type: ignore[arg-type]
            key=key,
            session_id=session_id,
            agent_id=agent_id,
            metadata=metadata or {},
            expires_at=expires_at,
            scope=scope,  # type: ignore[arg-type]
        )
        result: MemoryCreateResult = await self._call("memory.create", req)
        return result

    async def get(self, owner: str, memory_id: str) -> MemoryRecord:
        result: MemoryGetResult = await self._call("memory.get", MemoryGetRequest(owner=owner, id=memory_id))
        return result.memory

    async def update(
        self,
        owner: str,
        memory_id: str,
        *,
        content: str | None = None,
        memory_type: str | None = None,
        metadata: dict[str, Any] | None = None,
        expires_at: datetime | None = None,
        session_id: str | None = None,
    ) -> MemoryUpdateResult:
        req = MemoryUpdateRequest(
            owner=owner,
            id=memory_id,
            content=content,
            memory_type=memory_type,  # type: ignore[arg-type]
            metadata=metadata,
            expires_at=expires_at,
            session_id=session_id,
        )
        result: MemoryUpdateResult = await self._call("memory.update", req)
        return result

    async def delete(self, owner: str, memory_id: str) -> MemoryDeleteResult:
        result: MemoryDeleteResult = await self._call("memory.delete", MemoryDeleteRequest(owner=owner, id=memory_id))
        return result

    async def history(self, owner: str, memory_id: str, *, limit: int = 100) -> list[HistoryEntry]:
        """The memory's text changes, oldest first (as ``Memory.history``)."""
        result: MemoryHistoryResult = await self._call(
            "memory.history", MemoryHistoryRequest(owner=owner, id=memory_id, limit=limit)
        )
        return result.entries

    async def add_batch(
        self,
        owner: str,
        items: Sequence[BatchItemLike],
        *,
        session_id: str | None = None,
        agent_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> MemoryBatchResult:
        """Add many items in one request (as ``Memory.add_batch``): a string (or ``{"content": ...}``)
        is stored as one memory as it is; ``{"messages": ...}`` is published as a chat event. Items
        are done one by one: ``results[i].error`` says why item ``i`` failed, the others are stored;
        ``session_id``, ``agent_id`` and ``metadata`` apply to items that set none."""
        fields = batch_items(items, session_id=session_id, agent_id=agent_id, metadata=metadata)
        try:
            req = msgspec.convert({"owner": owner, "items": fields}, MemoryBatchRequest)
        except msgspec.ValidationError as exc:
            raise validation_failed(exc) from exc
        result: MemoryBatchResult = await self._call("memory.batch", req)
        return result

    async def restore(self, owner: str, memory_id: str) -> MemoryRestoreResult:
        """Bring a summarized or demoted memory back to its exact original (``Conflict`` if active)."""
        result: MemoryRestoreResult = await self._call(
            "memory.restore", MemoryRestoreRequest(owner=owner, id=memory_id)
        )
        return result

    async def list(
        self,
        owner: str,
        *,
        memory_type: str | None = None,
        session_id: str | None = None,
        q: str | None = None,
        state: str | None = None,
        limit: int = 50,
        offset: int = 0,
        page: int | None = None,
        agent_id: str | None = None,
    ) -> MemoryListResult:
        req = MemoryListRequest(
            owner=owner,
            memory_type=memory_type,  # type: ignore[arg-type]
            session_id=session_id,
            agent_id=agent_id,
            q=q,
            state=state,  # type: ignore[arg-type]
            limit=limit,
            offset=offset,
            page=page,
        )
        result: MemoryListResult = await self._call("memory.list", req)
        return result

    async def clear(
        self,
        owner: str,
        *,
        memory_type: str | None = None,
        older_than_days: int | None = None,
        agent_id: str | None = None,
    ) -> MemoryClearResult:
        """Delete the owner's memories (of one type, agent or age) from every store; global ones stay."""
        req = MemoryClearRequest(
            owner=owner,
            memory_type=memory_type,  # type: ignore[arg-type]
            older_than_days=older_than_days,
            agent_id=agent_id,
        )
        result: MemoryClearResult = await self._call("memory.clear", req)
        return result

    async def export_pages(
        self, owner: str, *, include_archived: bool = True, page_size: int = 1000
    ) -> AsyncIterator[MemoryExportResult]:
        """Every page of the owner's export, in id order."""
        after: str | None = None
        while True:
            req = MemoryExportRequest(owner=owner, include_archived=include_archived, after_id=after, limit=page_size)
            page: MemoryExportResult = await self._call("memory.export", req)
            yield page
            if page.next_after_id is None:
                return
            after = page.next_after_id

    async def export(self, owner: str, *, include_archived: bool = True) -> str:
        """All of the owner's memories as JSON lines (``MemoryRecord`` per line)."""
        return "".join([p.lines async for p in self.export_pages(owner, include_archived=include_archived)])

    async def import_lines(
        self, owner: str, lines: str | Iterable[str], *, progress: Callable[[int], object] | None = None
    ) -> MemoryImportResult:
        """Import JSON lines (as exported) into ``owner``; line numbers in errors count from 1.

        Each request (up to ``IMPORT_CHUNK_BYTES`` of lines) is all or nothing; a large
        import stops at the first request with bad lines, keeping the requests before it.
        ``progress`` is called with the number of lines sent so far after each request.
        """
        all_lines = lines.splitlines() if isinstance(lines, str) else [ln.rstrip("\n") for ln in lines]
        imported = updated = unchanged = 0
        start = 0
        while start < len(all_lines):
            end, size = start, 0
            while end < len(all_lines) and (end == start or size + len(all_lines[end]) + 1 <= IMPORT_CHUNK_BYTES):
                size += len(all_lines[end]) + 1
                end += 1
            req = MemoryImportRequest(owner=owner, lines="\n".join(all_lines[start:end]))
            part: MemoryImportResult = await self._call("memory.import", req, timeout=max(self.timeout, 60.0))
            if part.errors:
                errors = [ImportLineError(line=e.line + start, error=e.error) for e in part.errors]
                return MemoryImportResult(imported=imported, updated=updated, unchanged=unchanged, errors=errors)
            imported, updated, unchanged = imported + part.imported, updated + part.updated, unchanged + part.unchanged
            start = end
            if progress is not None:
                progress(end)
        return MemoryImportResult(imported=imported, updated=updated, unchanged=unchanged)
