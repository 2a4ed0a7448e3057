"""``memory.batch``: many plain items in one round trip, each done on its own.

A content item is stored exactly as ``memory.create`` stores it (the same checks, quota and
embed job); a messages item is published as a chat event, which the chat consumer stores and
extracts like any other. An item that fails gets its typed error in its result, at its path
(``$.items[2].content``), and the items after it are still done.
"""

from __future__ import annotations

from datetime import UTC, datetime

from memoryd.codec import decode, encode
from memoryd.schemas.events import ChatEvent
from memoryd.schemas.memory import (
    BatchItem,
    BatchItemResult,
    MemoryBatchRequest,
    MemoryBatchResult,
    MemoryCreateRequest,
)
from services.ingest.adapters.nats import Publisher
from services.ingest.handlers.memory import MemoryApi
from services.ingest.logic.batch import batch_result, create_fields, event_fields, is_content, item_error
from services.ingest.logic.chat import check_event
from shared.bus.rpc import error_reply


class BatchApi:
    def __init__(self, memory: MemoryApi, publisher: Publisher) -> None:
        self._memory = memory
        self._pub = publisher

    async def batch(self, req: MemoryBatchRequest) -> MemoryBatchResult:
        results = []
        for index, item in enumerate(req.items):
            try:
                results.append(await self._one(req.owner, index, item))
            except Exception as exc:  # every failure is this item's typed error
                results.append(BatchItemResult(index=index, error=item_error(error_reply(exc, "memory.batch"), index)))
        return batch_result(results)

    async def _one(self, owner: str, index: int, item: BatchItem) -> BatchItemResult:
        if is_content(item, index):
            request = decode(encode(create_fields(owner, item)), MemoryCreateRequest)
            created = await self._memory.create(request)
            return BatchItemResult(index=index, memory=created.memory, created=created.created)
        event = decode(encode(event_fields(owner, item, datetime.now(UTC))), ChatEvent)
        check_event(event)  # what the chat consumer would refuse, refused here
        # a retried item with its own event id is the same event: the digest is of the item as sent
        identity = encode({"owner": owner, "item": item}) if item.event_id else None
        duplicate = await self._pub.chat_event(event, identity)
        return BatchItemResult(index=index, event_id=event.event_id, duplicate=duplicate)
