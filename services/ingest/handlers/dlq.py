"""``admin.dlq.list|show|replay|drop``: the operator's view of the dead-letter queue.

Operator only (``mem.v1.rpc.admin.>``). ``replay`` republishes each selected letter to its
original subject and deletes the entry only after JetStream acknowledged the republished
message; a letter that cannot be replayed stays and is reported in ``failed``.
"""

from __future__ import annotations

from nats.js import JetStreamContext

from memoryd.errors import NotFound, ValidationFailed
from memoryd.schemas.dlq import (
    DlqDropRequest,
    DlqDropResult,
    DlqEntry,
    DlqListRequest,
    DlqListResult,
    DlqReplayRequest,
    DlqReplayResult,
    DlqSelect,
    DlqShowRequest,
    DlqShowResult,
)
from shared.observability.logging import get_logger
from shared.observability.metrics import DLQ_REPLAYED

from ..adapters.dlq import DlqStore, Letter, payload_ids

log = get_logger(__name__)


def entry(item: Letter) -> DlqEntry:
    letter = item.letter
    owner, event_id = payload_ids(letter.payload)
    return DlqEntry(
        seq=item.seq,
        stage=letter.stage,
        subject=letter.subject,
        error=letter.error,
        deliveries=letter.deliveries,
        failed_at=letter.failed_at,
        size=len(letter.payload),
        owner=owner,
        event_id=event_id,
    )


class DlqApi:
    def __init__(self, js: JetStreamContext) -> None:
        self.store = DlqStore(js)

    async def list_letters(self, req: DlqListRequest) -> DlqListResult:
        total, size = await self.store.totals()
        entries: list[DlqEntry] = []
        async for item in self.store.scan(req.stage):
            entries.append(entry(item))
            if len(entries) >= req.limit:
                break
        return DlqListResult(entries=entries, total=total, bytes=size)

    async def show(self, req: DlqShowRequest) -> DlqShowResult:
        item = await self.store.get(req.seq)
        if item is None:
            raise NotFound(f"dead letter {req.seq}: not in the DLQ")
        text = item.letter.payload.decode("utf-8", errors="replace")
        return DlqShowResult(entry=entry(item), payload=text, headers=item.letter.headers)

    async def _selected(self, req: DlqSelect) -> tuple[list[Letter], list[int]]:
        """The letters ``req`` selects, and the requested sequence numbers that are not there."""
        if not req.seqs and not req.stage and not req.all:
            raise ValidationFailed("$.seqs: name entries (seqs), a stage, or all=true")
        if req.seqs:
            found, missing = [], []
            for seq in req.seqs:
                item = await self.store.get(seq)
                if item is None or (req.stage and item.letter.stage != req.stage):
                    missing.append(seq)
                else:
                    found.append(item)
            return found, missing
        return [item async for item in self.store.scan(req.stage)], []

    async def replay(self, req: DlqReplayRequest) -> DlqReplayResult:
        items, missing = await self._selected(req)
        replayed: list[int] = []
        failed = {str(seq): "not in the DLQ" for seq in missing}
        for item in items:
            try:
                await self.store.republish(item)
            except Exception as exc:  # reported per entry; the entry stays
                failed[str(item.seq)] = f"{type(exc).__name__}: {exc}"
                continue
            await self.store.delete(item.seq)
            replayed.append(item.seq)
            DLQ_REPLAYED.labels(item.letter.stage).inc()
        log.info("dlq.replayed", replayed=len(replayed), failed=len(failed))
        return DlqReplayResult(replayed=replayed, failed=failed)

    async def drop(self, req: DlqDropRequest) -> DlqDropResult:
        items, missing = await self._selected(req)
        dropped = [item.seq for item in items if await self.store.delete(item.seq)]
        log.info("dlq.dropped", dropped=len(dropped))
        return DlqDropResult(dropped=dropped, missing=missing)
