"""What one sleep run carries through its phases: ids, settings, adapters, boundaries, the LLM.

`RunContext.checkpoint()` is the batch/phase boundary: it raises `RunAborted` when the
owner was active after the run's snapshot (KV bucket or the live subject) and
`WorkerStopping` when the service shuts down (the run is requeued, its message
redelivered), and otherwise keeps the JetStream message alive.

`RunContext.ask()` is the one LLM call of a batch: it returns the decoded JSON reply
(for the tolerant parsers of the `logic` modules) or raises `BatchBroken`
for anything that makes the batch unusable (HTTP error after the client's retry, bad
reply, spent budget). Owner activity during the call cancels it and aborts the run
there (counted in `llmCallsCancelled`), without waiting for the reply.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

import asyncpg
import nats.errors
from nats.js import JetStreamContext

from memoryd.errors import BudgetExceeded, DependencyDown
from memoryd.schemas.events import EmbedJob
from services.sleep.adapters.activity_kv import ActivityReader, LiveActivity
from services.sleep.config import SleepServiceConfig
from services.sleep.logic.schedule import should_abort
from services.sleep.logic.settings import SleepSettings
from shared.bus.embed_jobs import publish_embed_jobs
from shared.llm import LlmBadReply, LlmClient, LlmNotConfigured, LlmUnavailable
from shared.observability.logging import get_logger
from shared.vectors.pgvector import PgVectorStore
from shared.vectors.port import VectorStore

log = get_logger(__name__)

INTERRUPT_POLL_S = 1.0  # during an LLM call, the activity bucket is read this often

SYSTEM_PROMPT = (
    "You consolidate the long-term memory of one user of an AI assistant. "
    "Answer with one JSON object only, exactly in the shape you are asked for."
)


EmbedReason = Literal["new", "update", "reindex", "restore"]
Embed = tuple[str, str, EmbedReason]  # (memory_id, content_hash, reason) of an EmbedJob to publish


class RunAborted(Exception):
    """The owner was active during the run: stop at this boundary, status `aborted`."""


class WorkerStopping(DependencyDown):
    """The service is shutting down: the run goes back to the queue (transient)."""


class BatchBroken(Exception):
    """One LLM call gave nothing usable; its batch is counted in `batchesFailed`."""


@dataclass
class Deps:
    """The adapters a run needs, built once per service process."""

    pool: asyncpg.Pool
    js: JetStreamContext
    nc: Any  # nats Client
    cfg: SleepServiceConfig
    llm: LlmClient | None
    pairs: PgVectorStore
    mirrors: Sequence[VectorStore] = ()  # stores whose filter payload mirrors state changes
    activity: ActivityReader | None = None
    stop: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass
class RunContext:
    deps: Deps
    run_id: str
    owner: str
    snapshot_at: datetime
    settings: SleepSettings
    live: LiveActivity
    keepalive: Callable[[], Awaitable[None]]
    prompt_tokens: int = 0
    completion_tokens: int = 0
    extra: dict[str, Any] = field(default_factory=dict)  # run bookkeeping for `dream_runs.counters`

    @property
    def pool(self) -> asyncpg.Pool:
        return self.deps.pool

    @property
    def cfg(self) -> SleepServiceConfig:
        return self.deps.cfg

    @property
    def llm_route(self) -> bool:
        return self.deps.llm is not None and self.deps.llm.configured

    async def active_since_snapshot(self) -> datetime | None:
        """The owner's newest activity when it is after the snapshot (reads if the setting says so)."""
        reads = self.settings.sleep_count_reads
        last = self.live.newest(reads=reads)
        if self.deps.activity is not None:
            kv_last = await self.deps.activity.last(self.owner, reads=reads)
            if kv_last is not None and (last is None or kv_last > last):
                last = kv_last
        return last if should_abort(last, self.snapshot_at) else None

    async def checkpoint(self) -> None:
        """A batch or phase boundary (see the module docstring)."""
        if self.deps.stop.is_set():
            raise WorkerStopping("sleep worker stopping")
        active = await self.active_since_snapshot()
        if active is not None:
            raise RunAborted(f"owner activity at {active.isoformat()}")
        try:
            await self.keepalive()
        except (nats.errors.Error, TimeoutError) as exc:  # the message may still be acked later
            log.warning("sleep.in_progress_failed", error=str(exc) or type(exc).__name__)

    async def _interruptible(self, call: asyncio.Future[Any], operation: str) -> Any:
        """Await an LLM call; owner activity meanwhile cancels it and aborts the run (and says so).

        A stopping worker lets the call finish (its reply is applied; the run stops at the
        next checkpoint), so no tokens are spent for nothing.
        """
        while True:
            self.live.changed.clear()
            waiter = asyncio.ensure_future(self.live.changed.wait())
            try:
                await asyncio.wait([call, waiter], timeout=INTERRUPT_POLL_S, return_when=asyncio.FIRST_COMPLETED)
            finally:
                waiter.cancel()
            if call.done():
                return call.result()
            active = await self.active_since_snapshot()
            if active is not None:
                call.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await call
                self.extra["llmCallsCancelled"] = int(self.extra.get("llmCallsCancelled", 0)) + 1
                raise RunAborted(f"owner activity at {active.isoformat()} during the {operation} LLM call")

    async def ask(self, operation: str, prompt: str) -> object:
        """One LLM call; the decoded JSON reply, or `BatchBroken`.

        Owner activity during the call cancels it and aborts the run (`RunAborted`).
        """
        llm = self.deps.llm
        if llm is None:
            raise BatchBroken("no llm route")
        call = asyncio.ensure_future(
            llm.complete_json(
                owner=self.owner,
                operation=operation,
                messages=[{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": prompt}],
                response_type=object,
                max_tokens=self.settings.sleep_max_tokens,
                model=self.settings.llm_model(llm.model),
                reasoning_effort=self.settings.sleep_reasoning_effort,
            )
        )
        try:
            result = await self._interruptible(call, operation)
        except (LlmUnavailable, LlmBadReply, LlmNotConfigured, BudgetExceeded) as exc:
            raise BatchBroken(f"{exc.err_code}: {exc.description}") from exc
        self.prompt_tokens += result.prompt_tokens
        self.completion_tokens += result.completion_tokens
        return result.value

    async def publish_embeds(self, items: Sequence[Embed]) -> None:
        """EmbedJobs for (memory_id, content_hash, reason) after a commit; failures only logged.

        A memory whose job is lost keeps `needs_reindex`, which the embed service's lost-job sweep
        (`services/embed/sweep.py`) finds.
        """
        jobs = [EmbedJob(memory_id=m, owner=self.owner, content_hash=digest, reason=r) for m, digest, r in items]
        try:
            await publish_embed_jobs(self.deps.js, jobs)
        except DependencyDown as exc:
            log.warning("sleep.embed_publish_failed", count=len(jobs), error=exc.description)

    async def mirror_state(self, memory_ids: Sequence[str], state: str) -> None:
        """Tell stores that filter on their own payload (Qdrant) about state changes."""
        if not memory_ids:
            return
        for store in self.deps.mirrors:
            try:
                await store.update_payload(self.owner, list(memory_ids), state=state)
            except Exception as exc:  # a mirror that lags is repaired by its own reconciliation
                log.warning("sleep.mirror_failed", store=store.name, error=str(exc) or type(exc).__name__)
