"""Each service user gets the JetStream API subjects of its own streams, consumers and buckets,
never the whole ``$JS.API`` (``shared.nats_auth.jetstream_api``)."""

from __future__ import annotations

import pytest

from shared.authz import permitted
from shared.nats_auth import KEY_LIMITS_BUCKET, SERVICE_ROLES, role_permissions

API = "$JS.API"
STREAMS = ("MEM_EVENTS", "MEM_JOBS", "MEM_SLEEP", "MEM_DLQ")
#: (stream, durable) of every consumer loop
CONSUMERS = {"ingest": ("MEM_EVENTS", "ingest"), "extract": ("MEM_JOBS", "extract"), "embed": ("MEM_JOBS", "embed")}
CONSUMERS["sleep"] = ("MEM_SLEEP", "sleep")


def can(service: str, subject: str) -> bool:
    return permitted(role_permissions()[service], "publish", subject)


@pytest.mark.parametrize("service", SERVICE_ROLES)
def test_no_service_has_the_whole_jetstream_api(service: str) -> None:
    allow = role_permissions()[service]["publish"]["allow"]  # type: ignore[index]
    assert not [s for s in allow if s in (">", "$JS.>", "$JS.API.>", "$JS.API.*")], allow
    for subject in (
        f"{API}.INFO",
        f"{API}.STREAM.LIST",
        f"{API}.STREAM.DELETE.MEM_EVENTS",
        f"{API}.STREAM.PURGE.MEM_JOBS",
        f"{API}.CONSUMER.DELETE.MEM_JOBS.embed",
        f"{API}.STREAM.CREATE.KV_ATTACKER",
        f"{API}.STREAM.MSG.DELETE.MEM_EVENTS",
        "$KV.MEM_API_KEYS.mk_forged",
    ):
        assert not can(service, subject), (service, subject)
    # what every service sends at start: the streams, and ingest's durable consumer
    for stream in STREAMS:
        for op in ("INFO", "CREATE", "UPDATE"):
            assert can(service, f"{API}.STREAM.{op}.{stream}"), (service, op, stream)
    assert can(service, f"{API}.CONSUMER.DURABLE.CREATE.MEM_EVENTS.ingest")


@pytest.mark.parametrize("service", sorted(CONSUMERS))
def test_a_consumer_loop_reaches_its_own_consumer_only(service: str) -> None:
    stream, durable = CONSUMERS[service]
    for subject in (
        f"{API}.CONSUMER.CREATE.{stream}.{durable}.mem.v1.jobs.x",
        f"{API}.CONSUMER.INFO.{stream}.{durable}",
        f"{API}.CONSUMER.MSG.NEXT.{stream}.{durable}",
        f"{API}.STREAM.MSG.GET.{stream}",
    ):
        assert can(service, subject), (service, subject)
    for other, (other_stream, other_durable) in CONSUMERS.items():
        if other != service:
            assert not can(service, f"{API}.CONSUMER.MSG.NEXT.{other_stream}.{other_durable}"), (service, other)


def test_buckets_belong_to_who_uses_them() -> None:
    from services.gateway.adapters.limits_kv import LIMITS_BUCKET

    assert LIMITS_BUCKET == KEY_LIMITS_BUCKET
    writes = {s for s in SERVICE_ROLES if can(s, "$KV.MEM_ACTIVITY.alice")}
    reads = {s for s in SERVICE_ROLES if can(s, f"{API}.DIRECT.GET.KV_MEM_ACTIVITY.$KV.MEM_ACTIVITY.alice")}
    assert (writes, reads) == ({"ingest", "retrieve"}, {"ingest", "retrieve", "sleep"})
    assert {s for s in SERVICE_ROLES if can(s, f"{API}.STREAM.INFO.KV_MEM_API_KEYS")} == {"gateway"}
    assert {s for s in SERVICE_ROLES if can(s, "$KV.MEM_KEY_LIMITS.k1")} == {"gateway"}
    assert {s for s in SERVICE_ROLES if can(s, f"{API}.STREAM.MSG.DELETE.MEM_DLQ")} == {"ingest"}
