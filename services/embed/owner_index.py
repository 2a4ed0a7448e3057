"""Large owners' own HNSW indexes, built in the background after their vectors are written.

``Jobs`` notes the owners of every written batch; ``OwnerIndexes.run`` asks each pgvector
store to ``ensure_owner`` them, one at a time (a concurrent index build takes seconds per 10k
rows and must not hold up embedding). An owner is checked again at most every
``recheck_s``: the check counts the signature's rows to find the owner's share.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence

import asyncpg
from cachetools import TTLCache

from memoryd.errors import MemorydError
from shared.observability.logging import get_logger
from shared.vectors.pgvector import PgVectorStore
from shared.vectors.port import VectorStore

log = get_logger(__name__)

_OWNERS = 10_000  # (store, signature, owner) checks remembered, least recently used dropped


class OwnerIndexes:
    """A queue of (store, signature, owner) to check, drained by one background loop."""

    def __init__(self, *, recheck_s: float = 600.0, max_queued: int = 10_000) -> None:
        self._queue: asyncio.Queue[tuple[PgVectorStore, str, str]] = asyncio.Queue(max_queued)
        self._seen: TTLCache[tuple[int, str, str], bool] = TTLCache(_OWNERS, recheck_s)

    def note(self, stores: Sequence[VectorStore], signature: str, owners: Iterable[str]) -> None:
        """Queue these owners for a check (never blocks; a full queue drops, the next batch re-notes)."""
        for store in stores:
            if not isinstance(store, PgVectorStore):
                continue
            for owner in set(owners):
                key = (id(store), signature, owner)
                if key in self._seen or self._queue.full():
                    continue
                self._seen[key] = True
                self._queue.put_nowait((store, signature, owner))

    async def run(self, stop: asyncio.Event) -> None:
        """Check queued owners until ``stop``; a failed build is logged and retried after ``recheck_s``."""
        while not stop.is_set():
            get = asyncio.ensure_future(self._queue.get())
            stopped = asyncio.ensure_future(stop.wait())
            await asyncio.wait({get, stopped}, return_when=asyncio.FIRST_COMPLETED)
            stopped.cancel()
            if not get.done():
                get.cancel()
                return
            store, signature, owner = get.result()
            try:
                await store.ensure_owner(signature, owner)
            except (MemorydError, asyncpg.PostgresError, OSError) as exc:
                log.warning("embed.owner_index_failed", owner=owner, signature=signature, error=str(exc))
