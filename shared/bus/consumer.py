"""The pull-consumer loop shared by every JetStream stage, and its ack/nak/term policy.

Per message: undecodable or invalid -> a ``DeadLetter`` on ``mem.v1.dlq.<stage>``, then ``term``
(``nak`` when even the dead letter cannot be published: never dropped); handler succeeded ->
``ack`` (handlers commit first); transient failure (``transient``) or ``RateLimited`` -> ``nak``
with backoff or the error's ``retry_after_s``, never dead-lettered; a typed 4xx from the handler
(``ValidationFailed``, ``TooLarge``, ``Forbidden``) -> DLQ at once and ``term``; anything else ->
``nak`` with backoff until ``max_deliver``, then DLQ and ``term``. While a handler runs,
``in_progress`` is sent every third of ``ack_wait``. Each message is handled in a consumer span
continuing the publisher's ``traceparent``. No message can stop the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

from nats.aio.msg import Msg
from nats.errors import TimeoutError as NatsTimeout
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from memoryd import subjects as s
from memoryd import tracing
from memoryd.codec import decode, encode
from memoryd.errors import MemorydError, RateLimited, TooLarge, ValidationFailed
from memoryd.schemas import DeadLetter
from memoryd.subjects import dlq_subject

from ..observability.logging import get_logger
from ..observability.metrics import DLQ_MESSAGES, JOB_SECONDS, JOBS, QUEUE_LAG
from ..periodic import wait_or_stop
from ..settings.env import NatsConfig
from .age import AgeWatch
from .transient import is_transient

log = get_logger(__name__)
T = TypeVar("T")

#: Dead letters keep at most this much of the payload (base64 grows it by a third).
MAX_DLQ_PAYLOAD = 512 * 1024


def backoff_s(deliveries: int, base: float = 0.5, cap: float = 30.0) -> float:
    """Redelivery delay after the ``deliveries``-th attempt: 0.5, 1, 2, ... capped."""
    return float(min(cap, base * (2 ** max(0, deliveries - 1))))


@dataclass(frozen=True)
class ConsumerSpec:
    stage: str
    stream: str
    durable: str
    subject: str
    max_deliver: int = 5
    ack_wait_s: float = 30.0
    max_ack_pending: int = 1000
    batch: int = 32
    age_warning_fraction: float = 0.5  # see ``age``


#: Where each stage's durable consumer reads: (stream, durable, filter subject).
STAGES: dict[str, tuple[str, str, str]] = {
    # mem.v1.events.chat and the owner-bound mem.v1.events.chat.<owner>
    "ingest": (s.EVENTS_STREAM, s.INGEST_CONSUMER, s.EVENTS_SUBJECTS[0]),
    "extract": (s.JOBS_STREAM, s.EXTRACT_CONSUMER, s.EXTRACT_JOBS),
    "embed": (s.JOBS_STREAM, s.EMBED_CONSUMER, s.EMBED_JOBS),
    "sleep": (s.SLEEP_STREAM, s.SLEEP_CONSUMER, s.SLEEP_JOBS),
}


def consumer_spec(
    stage: str,
    nats: NatsConfig,
    *,
    batch: int = 32,
    ack_wait_s: float | None = None,
    max_ack_pending: int = 1000,
) -> ConsumerSpec:
    """The durable consumer of ``stage``: its stream, durable and subject, the process's delivery policy.

    ``ack_wait_s`` defaults to ``MEMORYD_NATS_ACK_WAIT_S``; a stage whose jobs run long passes its own."""
    stream, durable, subject = STAGES[stage]
    return ConsumerSpec(
        stage=stage,
        stream=stream,
        durable=durable,
        subject=subject,
        max_deliver=nats.max_deliver,
        ack_wait_s=nats.ack_wait_s if ack_wait_s is None else ack_wait_s,
        max_ack_pending=max_ack_pending,
        batch=batch,
        age_warning_fraction=nats.age_warning_fraction,
    )


def consumer_config(spec: ConsumerSpec) -> ConsumerConfig:
    """The durable consumer of ``spec`` (created by the stage, or ahead of it by provisioning)."""
    return ConsumerConfig(
        durable_name=spec.durable,
        ack_policy=AckPolicy.EXPLICIT,
        deliver_policy=DeliverPolicy.ALL,
        filter_subject=spec.subject,
        ack_wait=spec.ack_wait_s,
        max_deliver=-1,  # the loop dead-letters at spec.max_deliver itself
        max_ack_pending=spec.max_ack_pending,
    )


@dataclass
class JobContext:
    """What a handler may know about the message it handles."""

    msg: Msg
    deliveries: int
    subject: str

    async def in_progress(self) -> None:
        await self.msg.in_progress()


Handler = Callable[[T, JobContext], Awaitable[None]]


class PullConsumer(Generic[T]):
    """Fetch batches from a durable pull consumer and apply the policy above."""

    def __init__(self, js: JetStreamContext, spec: ConsumerSpec, tp: type[T], handler: Handler[T]) -> None:
        self._js = js
        self._spec = spec
        self._tp = tp
        self._handler = handler

    def consumer_config(self) -> ConsumerConfig:
        return consumer_config(self._spec)

    async def subscribe(self, stop: asyncio.Event) -> Any:
        """The pull subscription, retried while JetStream cannot answer (a cluster electing a
        new leader after a node died, NATS restarting): a transient failure here must not end
        the consumer loop, and with it the service. ``None`` when ``stop`` is set first."""
        spec = self._spec
        delay = 0.5
        while not stop.is_set():
            try:
                return await self._js.pull_subscribe(
                    spec.subject, durable=spec.durable, stream=spec.stream, config=self.consumer_config()
                )
            except Exception as exc:
                if not is_transient(exc):
                    raise
                log.warning("consumer.subscribe_failed", stage=spec.stage, error=str(exc) or type(exc).__name__)
                await wait_or_stop(stop, delay)
                delay = min(delay * 2, 10.0)
        return None

    async def run(self, stop: asyncio.Event) -> None:
        spec = self._spec
        sub = await self.subscribe(stop)
        if sub is None:
            return
        DLQ_MESSAGES.labels(spec.stage)  # at 0 before the first dead letter: increase() sees it
        last_lag = 0.0
        ages = AgeWatch(self._js, spec.stream, spec.subject, spec.age_warning_fraction)
        while not stop.is_set():
            try:
                msgs = await sub.fetch(spec.batch, timeout=1.0)
            except (NatsTimeout, TimeoutError):  # nats-py also raises the plain one when idle
                msgs = []
            except Exception as exc:
                log.warning("consumer.fetch_failed", stage=spec.stage, error=str(exc) or type(exc).__name__)
                await asyncio.sleep(1.0)
                continue
            if msgs:
                outcomes = await asyncio.gather(*(self.process(m) for m in msgs), return_exceptions=True)
                for outcome in outcomes:
                    if isinstance(outcome, Exception):
                        log.error("consumer.process_failed", stage=spec.stage, exc_info=outcome)
                        JOBS.labels(spec.stage, "process_failed").inc()
            if time.monotonic() - last_lag > 5.0:
                last_lag = time.monotonic()
                with contextlib.suppress(Exception):
                    info = await sub.consumer_info()
                    QUEUE_LAG.labels(spec.durable).set(info.num_pending or 0)
                    await ages.update(info)
        with contextlib.suppress(Exception):
            await sub.unsubscribe()

    async def process(self, msg: Msg) -> None:
        """Apply the policy to one fetched message (``run`` does this for every batch)."""
        spec = self._spec
        deliveries = msg.metadata.num_delivered
        attributes: dict[str, str | int] = {
            "messaging.system": "nats",
            "messaging.destination.name": msg.subject,
            "messaging.consumer.group.name": spec.durable,
            "messaging.nats.deliveries": deliveries or 0,
        }
        with tracing.span(
            f"{spec.stage} {msg.subject}", tracing.SpanKind.CONSUMER, headers=msg.headers, attributes=attributes
        ):
            await self._process(msg, deliveries)

    async def _process(self, msg: Msg, deliveries: int) -> None:
        spec = self._spec
        started = time.perf_counter()
        try:
            value = decode(msg.data, self._tp)
        except Exception as exc:  # decode raises only typed errors; anything else is poison too
            error = f"{exc.err_code}: {exc.description}" if isinstance(exc, ValidationFailed | TooLarge) else repr(exc)
            await self._reject(msg, deliveries, error[:4000])
            return
        keepalive = asyncio.create_task(self._keepalive(msg))
        try:
            await self._handler(value, JobContext(msg=msg, deliveries=deliveries, subject=msg.subject))
        except Exception as exc:
            await self._failed(msg, deliveries, exc)
        else:
            await msg.ack()
            JOBS.labels(spec.stage, "acked").inc()
        finally:
            keepalive.cancel()
            JOB_SECONDS.labels(spec.stage).observe(time.perf_counter() - started)

    async def _reject(self, msg: Msg, deliveries: int, error: str) -> None:
        """A payload that can never be handled: dead-letter it with its error, then ``term``."""
        spec = self._spec
        try:
            await self._dead_letter(msg, deliveries, error)
        except Exception as exc:  # JetStream down: keep the message for a later delivery
            log.warning("consumer.dead_letter_failed", stage=spec.stage, error=str(exc) or type(exc).__name__)
            await msg.nak(delay=backoff_s(deliveries))
            return
        log.warning("consumer.invalid", stage=spec.stage, deliveries=deliveries, error=error[:200])
        tracing.mark_error(error)
        await msg.term()
        JOBS.labels(spec.stage, "invalid").inc()

    async def _failed(self, msg: Msg, deliveries: int, exc: BaseException) -> None:
        spec = self._spec
        error = f"{type(exc).__name__}: {exc}"
        tracing.mark_error(error)
        if isinstance(exc, RateLimited):  # the owner is over its rate: the event waits in the stream
            await msg.nak(delay=max(exc.retry_after_s, 0.05))
            JOBS.labels(spec.stage, "rate_limited").inc()
        elif is_transient(exc):
            log.warning("consumer.transient", stage=spec.stage, deliveries=deliveries, error=error)
            retry_after = getattr(exc, "retry_after_s", None)
            await msg.nak(delay=retry_after if isinstance(retry_after, float) else backoff_s(deliveries))
            JOBS.labels(spec.stage, "retry_transient").inc()
        elif (isinstance(exc, MemorydError) and 400 <= exc.code < 500) or deliveries >= spec.max_deliver:
            log.error("consumer.dead_letter", stage=spec.stage, deliveries=deliveries, error=error)
            await self._dead_letter(msg, deliveries, error)
            await msg.term()
            JOBS.labels(spec.stage, "dead_lettered").inc()
        else:
            log.warning("consumer.retry", stage=spec.stage, deliveries=deliveries, error=error, exc_info=exc)
            await msg.nak(delay=backoff_s(deliveries))
            JOBS.labels(spec.stage, "retry").inc()

    async def _dead_letter(self, msg: Msg, deliveries: int, error: str) -> None:
        payload = msg.data
        if len(payload) > MAX_DLQ_PAYLOAD:
            error = f"{error} [payload of {len(payload)} bytes cut to {MAX_DLQ_PAYLOAD}]"
            payload = payload[:MAX_DLQ_PAYLOAD]
        letter = DeadLetter(
            stage=self._spec.stage,
            subject=msg.subject,
            error=error[:4000],
            deliveries=deliveries,
            payload=payload,
            failed_at=datetime.now(UTC),
            headers=dict(msg.headers or {}),
        )
        await self._js.publish(dlq_subject(self._spec.stage), encode(letter))
        DLQ_MESSAGES.labels(self._spec.stage).inc()

    async def _keepalive(self, msg: Msg) -> None:
        period = max(1.0, self._spec.ack_wait_s / 3)
        with contextlib.suppress(asyncio.CancelledError, Exception):
            while True:
                await asyncio.sleep(period)
                await msg.in_progress()
