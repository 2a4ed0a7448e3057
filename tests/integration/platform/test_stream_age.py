"""The age of the oldest unprocessed message, and the warning before the stream's age limit drops it."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from nats.aio.client import Client
from nats.js.api import AckPolicy, ConsumerConfig, StreamConfig
from prometheus_client import REGISTRY

from shared.bus.age import AgeWatch, aging, oldest_unprocessed_age


def test_aging_threshold() -> None:
    day = 86_400.0
    assert not aging(3 * day, 7 * day, 0.5)
    assert aging(3.5 * day, 7 * day, 0.5)
    assert not aging(100 * day, 0.0, 0.5)  # no age limit: nothing is ever dropped


async def test_oldest_unprocessed_age_follows_the_ack_floor(nc: Client) -> None:
    js = nc.jetstream()
    await js.add_stream(StreamConfig(name="T_AGE", subjects=["t.age.>"], max_age=10.0))
    await js.add_consumer(
        "T_AGE", ConsumerConfig(durable_name="t-age", ack_policy=AckPolicy.EXPLICIT, filter_subject="t.age.>")
    )
    info = await js.consumer_info("T_AGE", "t-age")
    assert await oldest_unprocessed_age(js, "T_AGE", "t.age.>", info) == 0.0  # nothing waiting

    await js.publish("t.age.a", b"first")
    await asyncio.sleep(0.3)
    await js.publish("t.age.b", b"second")
    info = await js.consumer_info("T_AGE", "t-age")
    later = datetime.now(UTC) + timedelta(seconds=6)
    assert 6.2 <= await oldest_unprocessed_age(js, "T_AGE", "t.age.>", info, now=later) < 8.0

    sub = await js.pull_subscribe("t.age.>", durable="t-age", stream="T_AGE")
    first = (await sub.fetch(1, timeout=2))[0]
    assert first.data == b"first"
    await first.ack_sync()
    info = await js.consumer_info("T_AGE", "t-age")
    age_second = await oldest_unprocessed_age(js, "T_AGE", "t.age.>", info, now=later)
    assert 5.5 <= age_second < 6.2  # the second message is now the oldest one

    watch = AgeWatch(js, "T_AGE", "t.age.>", fraction=0.01)  # 0.1 s of a 10 s limit
    await asyncio.sleep(0.3)
    age = await watch.update(info)
    assert age > 0.1
    assert REGISTRY.get_sample_value("memoryd_stream_max_age_seconds", {"stream": "T_AGE"}) == 10.0
    assert REGISTRY.get_sample_value("memoryd_stream_oldest_unprocessed_age_seconds", {"stream": "T_AGE"}) == age
