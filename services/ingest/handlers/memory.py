"""The memory API (``memory.*`` RPCs): decoded request in, result out.

Every operation is scoped to the request's ``owner``: another owner's memory id is
404, exactly like an id that does not exist. A global-scope memory is written only on the
operator's subjects (``admin.memory.create|update|delete|import``; NATS permissions keep them
from clients): on the client subjects ``scope=global``, or a change to or the deletion of a
global memory, is 403, and ``memory.clear`` leaves global memories alone.
Writes publish an ``EmbedJob`` when a memory is new or its content changed, and record
``api`` activity, after the commit.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

import msgspec

from memoryd.errors import Forbidden, NotFound, ValidationFailed
from memoryd.schemas import RPC_OPS
from memoryd.schemas.memory import (
    DeletionReceipt,
    ImportLineError,
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
    MemoryStatsRequest,
    MemoryStatsResult,
    MemoryUpdateRequest,
    MemoryUpdateResult,
)
from services.ingest.adapters import postgres as crud
from services.ingest.adapters.nats import Embed, Publisher
from services.ingest.adapters.stores import MemoryStores
from services.ingest.logic.chat import (
    GLOBAL_REFUSED,
    MAX_MEMORY_METADATA_BYTES,
    check_expiry,
    check_metadata,
    check_text,
    hit_rate,
    page_offset,
)
from services.ingest.logic.history import history_entries
from services.ingest.logic.imports import parse_import
from shared import metadata_filter
from shared.bus.rpc import RpcServer
from shared.db import memories
from shared.db.pool import Connection, Pool
from shared.settings.memory import MemorySettings
from shared.tokens import estimate_tokens

#: An export page stops growing past this many bytes (a reply must fit NATS' max payload).
MAX_EXPORT_PAGE_BYTES = 2 * 1024 * 1024
_line_encoder = msgspec.json.Encoder()


class _ImportFailed(Exception):
    def __init__(self, errors: list[ImportLineError]) -> None:
        super().__init__(f"{len(errors)} line(s) failed")
        self.errors = errors


class MemoryApi:
    def __init__(
        self, stores: MemoryStores, publisher: Publisher, settings: Callable[[str], Awaitable[MemorySettings]]
    ) -> None:
        self._stores = stores
        self._pool = stores.pool
        self._pub = publisher
        self._settings = settings

    async def _check_quota(self, conn: Connection | Pool, owner: str, adding: int, size: int) -> None:
        s = await self._settings(owner)
        await memories.check_quota(
            conn, owner, max_memories=s.max_memories, max_bytes=s.max_memory_bytes, adding=adding, adding_bytes=size
        )

    async def register(self, rpc: RpcServer) -> None:
        for name, handler in (
            ("memory.create", self.create),
            ("admin.memory.create", self.admin_create),
            ("memory.get", self.get),
            ("memory.history", self.history),
            ("memory.update", self.update),
            ("admin.memory.update", self.admin_update),
            ("memory.delete", self.delete),
            ("admin.memory.delete", self.admin_delete),
            ("memory.list", self.list),
            ("memory.stats", self.stats),
            ("memory.clear", self.clear),
            ("memory.export", self.export),
            ("memory.import", self.import_),
            ("admin.memory.import", self.admin_import),
        ):
            await rpc.add(RPC_OPS[name], handler)

    async def create(self, req: MemoryCreateRequest) -> MemoryCreateResult:
        """Owner memories; ``scope=global`` is refused here (403): see ``admin_create``."""
        if req.scope == "global":
            raise Forbidden(GLOBAL_REFUSED)
        return await self._create(req, operator=False)

    async def admin_create(self, req: MemoryCreateRequest) -> MemoryCreateResult:
        """Operator-only subject (NATS permissions): may also create ``scope=global`` memories,
        which every owner's retrieval sees and no owner's sleep run modifies."""
        return await self._create(req, operator=True)

    async def _create(self, req: MemoryCreateRequest, *, operator: bool) -> MemoryCreateResult:
        check_text(
            {
                "content": req.content,
                "key": req.key,
                "session_id": req.session_id,
                "agent_id": req.agent_id,
                "metadata": req.metadata,
            }
        )
        check_metadata(req.metadata, MAX_MEMORY_METADATA_BYTES)
        expires_at = check_expiry(req.expires_at, datetime.now(UTC))
        if req.scope == "session" and req.session_id is None:
            raise ValidationFailed.at("$.session_id", "scope 'session' needs a session_id")
        await self._check_quota(self._pool, req.owner, 1, len(req.content.encode("utf-8", "surrogatepass")))
        if req.key is not None:
            record, created, changed = await memories.upsert_by_key(
                self._pool,
                owner=req.owner,
                key=req.key,
                memory_type=req.memory_type,
                content=req.content,
                source="api",
                session_id=req.session_id,
                agent_id=req.agent_id,
                metadata=req.metadata,
                scope=req.scope,
                expires_at=expires_at,
                operator=operator,
            )
        else:
            record = await memories.insert(
                self._pool,
                owner=req.owner,
                memory_type=req.memory_type,
                content=req.content,
                source="api",
                session_id=req.session_id,
                agent_id=req.agent_id,
                metadata=req.metadata,
                scope=req.scope,
                expires_at=expires_at,
            )
            created, changed = True, False
        if created or changed:
            await self._pub.embed_best_effort(
                [Embed(record.id, req.owner, record.content_hash, "new" if created else "update")]
            )
        await self._pub.activity_best_effort(req.owner, req.session_id)
        return MemoryCreateResult(memory=record, created=created)

    async def get(self, req: MemoryGetRequest) -> MemoryGetResult:
        record = await memories.get(self._pool, req.owner, req.id)
        if record is None:
            raise NotFound(f"memory {req.id} not found")
        return MemoryGetResult(memory=record)

    async def history(self, req: MemoryHistoryRequest) -> MemoryHistoryResult:
        """The memory's text changes (``api_update`` and consolidation), oldest first."""
        record = await memories.get(self._pool, req.owner, req.id)
        if record is None:
            raise NotFound(f"memory {req.id} not found")
        changes = await crud.content_history(self._pool, record.owner, record.id, req.limit)
        return MemoryHistoryResult(
            id=record.id, content=record.content, entries=history_entries(changes, record.content)
        )

    async def update(self, req: MemoryUpdateRequest) -> MemoryUpdateResult:
        """A global memory is 403 here: see ``admin_update``."""
        return await self._update(req, operator=False)

    async def admin_update(self, req: MemoryUpdateRequest) -> MemoryUpdateResult:
        """Operator-only subject: may also change a global memory."""
        return await self._update(req, operator=True)

    async def _update(self, req: MemoryUpdateRequest, *, operator: bool) -> MemoryUpdateResult:
        check_text({"content": req.content, "session_id": req.session_id, "metadata": req.metadata})
        check_metadata(req.metadata, MAX_MEMORY_METADATA_BYTES)
        expires_at = check_expiry(req.expires_at, datetime.now(UTC))
        async with self._pool.acquire() as conn:
            done = await crud.update_memory(
                conn,
                req.owner,
                req.id,
                content=req.content,
                memory_type=req.memory_type,
                metadata=req.metadata,
                expires_at=expires_at,
                session_id=req.session_id,
                operator=operator,
            )
        if done is None:
            raise NotFound(f"memory {req.id} not found")
        record, changed = done
        if changed:
            await self._pub.embed_best_effort([Embed(record.id, req.owner, record.content_hash, "update")])
        if req.memory_type is not None or req.session_id is not None or req.expires_at is not None:
            await self._stores.mirror_payload([record])
        await self._pub.activity_best_effort(req.owner, record.session_id)
        return MemoryUpdateResult(memory=record, reembed=changed)

    async def delete(self, req: MemoryDeleteRequest) -> MemoryDeleteResult:
        """A global memory is 403 here (every owner sees it): see ``admin_delete``."""
        return await self._delete(req, operator=False)

    async def admin_delete(self, req: MemoryDeleteRequest) -> MemoryDeleteResult:
        """Operator-only subject: may also delete a global memory."""
        return await self._delete(req, operator=True)

    async def _delete(self, req: MemoryDeleteRequest, *, operator: bool) -> MemoryDeleteResult:
        current = await memories.get(self._pool, req.owner, req.id)
        if current is None:
            raise NotFound(f"memory {req.id} not found")
        if current.scope == "global" and not operator:
            raise Forbidden(f"memory {req.id} is global: {GLOBAL_REFUSED}")
        receipt = await self._stores.delete(req.owner, [req.id])
        if receipt.rows == 0:  # deleted concurrently
            raise NotFound(f"memory {req.id} not found")
        await self._pub.activity_best_effort(req.owner)
        return MemoryDeleteResult(id=req.id, removed=receipt)

    async def list(self, req: MemoryListRequest) -> MemoryListResult:
        """``total``: memories matching the filters; ``tokens_used``: ``ceil(len/4)`` summed over
        the page; ``hit_rate``: share of the matching memories retrieval ever returned
        (``last_accessed_at`` set), 0.0 when none match; ``event_processed`` with ``event_id``."""
        check_text({"q": req.q, "session_id": req.session_id, "agent_id": req.agent_id, "event_id": req.event_id})
        flt = crud.ListFilter(
            owner=req.owner,
            memory_type=req.memory_type,
            session_id=req.session_id,
            agent_id=req.agent_id,
            state=req.state,
            q=req.q,
            source=req.source,
            event_id=req.event_id,
            metadata=metadata_filter.parse(req.filters) if req.filters else None,
        )
        offset = page_offset(req.limit, req.offset, req.page)
        processed = None
        if req.event_id is not None:  # read before the rows: what it reports is listed below
            processed = await crud.event_processed(self._pool, req.owner, req.event_id)
        records, total, hits = await crud.list_memories(self._pool, flt, req.limit, offset)
        return MemoryListResult(
            memories=records,
            total=total,
            tokens_used=sum(estimate_tokens(r.content) for r in records),
            hit_rate=hit_rate(hits, total),
            event_processed=processed,
        )

    async def stats(self, req: MemoryStatsRequest) -> MemoryStatsResult:
        rows = await crud.memory_stats(self._pool, req.owner)
        by: dict[str, dict[str, int]] = {"type": {}, "state": {}, "source": {}}
        for r in rows:
            for column, counts in by.items():
                counts[r[column]] = counts.get(r[column], 0) + int(r["n"])
        last = [r["last_at"] for r in rows if r["last_at"] is not None]
        return MemoryStatsResult(
            total=sum(int(r["n"]) for r in rows),
            tokens=sum(int(r["tokens"] or 0) for r in rows),
            by_type=dict(sorted(by["type"].items())),
            by_state=dict(sorted(by["state"].items())),
            by_source=dict(sorted(by["source"].items())),
            last_activity=max(last) if last else None,
        )

    async def clear(self, req: MemoryClearRequest) -> MemoryClearResult:
        check_text({"agent_id": req.agent_id})
        async with self._pool.acquire() as conn:
            ids = await crud.ids_to_clear(conn, req.owner, req.memory_type, req.older_than_days, req.agent_id)
        receipt = await self._stores.delete(req.owner, ids) if ids else DeletionReceipt()
        if receipt.rows:
            await self._pub.activity_best_effort(req.owner)
        return MemoryClearResult(count=receipt.rows, removed=receipt)

    async def export(self, req: MemoryExportRequest) -> MemoryExportResult:
        records = await crud.export_page(self._pool, req.owner, req.include_archived, req.after_id, req.limit + 1)
        more = len(records) > req.limit
        lines: list[bytes] = []
        size = 0
        for rec in records[: req.limit]:
            line = _line_encoder.encode(rec)
            if lines and size + len(line) + 1 > MAX_EXPORT_PAGE_BYTES:
                more = True
                break
            lines.append(line)
            size += len(line) + 1
        text = b"".join(line + b"\n" for line in lines).decode()
        next_after = records[len(lines) - 1].id if more and lines else None
        return MemoryExportResult(lines=text, count=len(lines), next_after_id=next_after)

    async def import_(self, req: MemoryImportRequest) -> MemoryImportResult:
        """All or nothing: a bad line (reported by number) means nothing is written; a
        ``scope=global`` line, or one that would change a global memory, is a bad line here."""
        return await self._import(req, operator=False)

    async def admin_import(self, req: MemoryImportRequest) -> MemoryImportResult:
        """Operator-only subject: lines may be (or change) global memories."""
        return await self._import(req, operator=True)

    async def _import(self, req: MemoryImportRequest, *, operator: bool) -> MemoryImportResult:
        parsed, errors = parse_import(req.lines, datetime.now(UTC), operator=operator)
        if errors:
            return MemoryImportResult(imported=0, updated=0, unchanged=0, errors=errors)
        counts = {"imported": 0, "updated": 0, "unchanged": 0}
        embeds: list[Embed] = []
        updated: list[MemoryRecord] = []
        try:
            async with self._pool.acquire() as conn, conn.transaction():
                size = sum(len(rec.content.encode("utf-8", "surrogatepass")) for _, rec in parsed)
                await self._check_quota(conn, req.owner, len(parsed), size)
                failed: list[ImportLineError] = []
                for number, rec in parsed:
                    try:
                        status, stored, reembed = await crud.import_record(conn, req.owner, rec, operator=operator)
                    except crud.KeyTaken as exc:
                        failed.append(ImportLineError(line=number, error=str(exc)))
                        continue
                    counts[status] += 1
                    if status == "updated":
                        updated.append(stored)
                    if reembed:
                        embeds.append(Embed(stored.id, req.owner, stored.content_hash, "new"))
                if failed:
                    raise _ImportFailed(failed)
        except _ImportFailed as exc:
            return MemoryImportResult(imported=0, updated=0, unchanged=0, errors=exc.errors)
        await self._pub.embed_best_effort(embeds)
        await self._stores.mirror_payload(updated)
        if counts["imported"] or counts["updated"]:
            await self._pub.activity_best_effort(req.owner)
        return MemoryImportResult(imported=counts["imported"], updated=counts["updated"], unchanged=counts["unchanged"])
