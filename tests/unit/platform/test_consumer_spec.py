"""One helper builds every stage's durable consumer from the subjects and the process's NATS policy."""

from __future__ import annotations

from memoryd.subjects import EMBED_JOBS, EVENTS_STREAM, JOBS_STREAM, SLEEP_STREAM
from shared.bus.consumer import STAGES, consumer_config, consumer_spec
from shared.settings.env import NatsConfig


def test_each_stage_reads_its_own_stream_and_subject() -> None:
    nats = NatsConfig(max_deliver=7, ack_wait_s=12.0)
    specs = {stage: consumer_spec(stage, nats) for stage in STAGES}
    assert {stage: spec.stream for stage, spec in specs.items()} == {
        "ingest": EVENTS_STREAM,
        "extract": JOBS_STREAM,
        "embed": JOBS_STREAM,
        "sleep": SLEEP_STREAM,
    }
    assert specs["embed"].subject == EMBED_JOBS and specs["embed"].durable == "embed"
    assert {(s.max_deliver, s.ack_wait_s, s.batch, s.max_ack_pending) for s in specs.values()} == {(7, 12.0, 32, 1000)}


def test_a_stage_overrides_batch_ack_wait_and_pending() -> None:
    spec = consumer_spec("sleep", NatsConfig(), batch=1, ack_wait_s=60.0, max_ack_pending=1)
    assert (spec.stage, spec.batch, spec.ack_wait_s, spec.max_ack_pending) == ("sleep", 1, 60.0, 1)
    conf = consumer_config(spec)
    assert (conf.durable_name, conf.filter_subject, conf.ack_wait, conf.max_ack_pending) == (
        "sleep",
        spec.subject,
        60.0,
        1,
    )
