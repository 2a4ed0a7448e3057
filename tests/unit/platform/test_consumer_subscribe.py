"""The consumer loop survives a JetStream that cannot answer when it subscribes (a cluster
electing a leader after a node died): it retries, and stops cleanly when asked."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from nats.errors import TimeoutError as NatsTimeout

from shared.bus.consumer import PullConsumer, consumer_spec
from shared.settings.env import NatsConfig


class FlakyJetStream:
    """``pull_subscribe`` fails with ``failures`` in turn, then returns ``sub``."""

    def __init__(self, failures: list[BaseException], sub: Any = "sub") -> None:
        self.failures = failures
        self.sub = sub
        self.calls = 0

    async def pull_subscribe(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        if self.failures:
            raise self.failures.pop(0)
        return self.sub


async def _handler(value: Any, ctx: Any) -> None:
    raise AssertionError("no message is handled here")


def consumer(js: FlakyJetStream) -> PullConsumer[Any]:
    return PullConsumer(js, consumer_spec("embed", NatsConfig()), dict, _handler)  # type: ignore[arg-type]


async def test_subscribe_retries_transient_failures_until_jetstream_answers() -> None:
    js = FlakyJetStream([NatsTimeout(), ConnectionRefusedError()])
    sub = await asyncio.wait_for(consumer(js).subscribe(asyncio.Event()), timeout=10)
    assert (sub, js.calls) == ("sub", 3)


async def test_subscribe_gives_up_quietly_when_stopped() -> None:
    js = FlakyJetStream([NatsTimeout()] * 100)
    stop = asyncio.Event()
    task = asyncio.create_task(consumer(js).subscribe(stop))
    await asyncio.sleep(0.2)
    stop.set()
    assert await asyncio.wait_for(task, timeout=5) is None
    assert js.calls >= 1


async def test_subscribe_raises_what_is_not_transient() -> None:
    js = FlakyJetStream([ValueError("bad consumer config")])
    with pytest.raises(ValueError, match="bad consumer config"):
        await consumer(js).subscribe(asyncio.Event())
