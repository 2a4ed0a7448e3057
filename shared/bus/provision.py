"""Idempotent provisioning of memoryd's JetStream streams and the activity KV bucket.

Limits (documented in docs/reliability.md): events and jobs discard *new* messages at
``max_bytes`` so publishers see an error instead of silently losing unprocessed work;
the DLQ keeps 30 days. Events are kept only until ingest acks them (interest retention),
so the limit counts unprocessed events, not a week of processed ones; jobs are a work
queue. Every stream has ``MEMORYD_NATS_REPLICAS`` replicas (1 on one server, 3 on a
JetStream cluster). Interest retention drops a message nobody is subscribed to, so provisioning also
creates ingest's durable consumer before any client can publish. Every service calls
``ensure_streams`` at start; concurrent calls and repeated starts are harmless.
"""

from __future__ import annotations

import contextlib

from nats.js import JetStreamContext
from nats.js.api import (
    DiscardPolicy,
    KeyValueConfig,
    RetentionPolicy,
    StorageType,
    StreamConfig,
)
from nats.js.errors import BadRequestError, NotFoundError
from nats.js.kv import KeyValue

from memoryd import subjects as s
from shared.settings.env import NatsConfig

from .consumer import consumer_config, consumer_spec

DAY = 86_400.0


def stream_configs(cfg: NatsConfig) -> list[StreamConfig]:
    """The desired configuration of every stream."""
    age = cfg.stream_max_age_days * DAY

    def stream(
        name: str,
        subjects: list[str],
        retention: RetentionPolicy,
        discard: DiscardPolicy,
        max_age: float,
        dedupe_s: float,
    ) -> StreamConfig:
        return StreamConfig(
            name=name,
            subjects=subjects,
            retention=retention,
            discard=discard,
            max_age=max_age,
            duplicate_window=dedupe_s,
            storage=StorageType.FILE,
            max_bytes=cfg.stream_max_bytes,
            num_replicas=cfg.replicas,
        )

    limits, work, new, old = RetentionPolicy.LIMITS, RetentionPolicy.WORK_QUEUE, DiscardPolicy.NEW, DiscardPolicy.OLD
    return [
        stream(s.EVENTS_STREAM, list(s.EVENTS_SUBJECTS), RetentionPolicy.INTEREST, new, age, 120.0),
        stream(s.JOBS_STREAM, list(s.JOBS_SUBJECTS), work, new, age, 120.0),
        stream(s.SLEEP_STREAM, [s.SLEEP_JOBS], work, new, age, 3600.0),
        stream(s.DLQ_STREAM, list(s.DLQ_SUBJECTS), limits, old, 30 * DAY, 120.0),
    ]


async def ensure_streams(js: JetStreamContext, cfg: NatsConfig) -> None:
    """Create each stream, or update it to the desired configuration; then ingest's consumer."""
    for conf in stream_configs(cfg):
        assert conf.name is not None
        try:
            await js.stream_info(conf.name)
        except NotFoundError:
            try:
                await js.add_stream(conf)
                continue
            except BadRequestError:  # created concurrently by another service
                pass
        await js.update_stream(conf)
    spec = consumer_spec("ingest", cfg)
    try:
        await js.consumer_info(spec.stream, spec.durable)
    except NotFoundError:
        with contextlib.suppress(BadRequestError):  # created concurrently by another service
            await js.add_consumer(spec.stream, consumer_config(spec))


async def ensure_activity_bucket(js: JetStreamContext, replicas: int = 1) -> KeyValue:
    """The KV bucket of last-activity times per owner (``replicas`` copies on a cluster)."""
    try:
        return await js.key_value(s.ACTIVITY_BUCKET)
    except NotFoundError:  # BucketNotFoundError
        return await js.create_key_value(KeyValueConfig(bucket=s.ACTIVITY_BUCKET, history=1, replicas=replicas))
