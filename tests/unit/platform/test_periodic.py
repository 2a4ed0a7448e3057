"""The one periodic loop: rounds until stopped, failures logged and retried, wake-ups, waiting first."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from shared import periodic
from shared.periodic import every, wait_or_stop


class Warnings:
    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, Any]]] = []

    def warning(self, event: str, **fields: Any) -> None:
        self.seen.append((event, fields))


async def test_rounds_run_until_stop_and_a_failed_round_is_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    warnings = Warnings()
    monkeypatch.setattr(periodic, "log", warnings)
    stop = asyncio.Event()
    rounds: list[int] = []

    async def work() -> None:
        rounds.append(len(rounds))
        if len(rounds) == 2:
            raise OSError("database away")
        if len(rounds) == 4:
            stop.set()

    await asyncio.wait_for(every(0.001, stop, work, failed="test.round_failed"), 5)
    assert rounds == [0, 1, 2, 3]
    assert warnings.seen == [("test.round_failed", {"error": "OSError: database away"})]


async def test_wait_first_runs_nothing_when_stopped_during_the_first_interval() -> None:
    stop = asyncio.Event()
    rounds: list[float] = []

    async def work() -> None:
        rounds.append(1.0)

    task = asyncio.create_task(every(30.0, stop, work, failed="test.round_failed", wait_first=True))
    await asyncio.sleep(0.05)
    stop.set()
    await asyncio.wait_for(task, 1)  # the 30 s wait is cut short by the stop
    assert rounds == []


async def test_wake_starts_a_round_before_the_interval_and_is_cleared() -> None:
    stop, wake = asyncio.Event(), asyncio.Event()
    woken = asyncio.Event()

    async def work() -> None:
        woken.set()

    task = asyncio.create_task(every(30.0, stop, work, failed="test.round_failed", wait_first=True, wake=wake))
    await asyncio.sleep(0.02)
    assert not woken.is_set()
    wake.set()
    await asyncio.wait_for(woken.wait(), 1)
    assert not wake.is_set()
    stop.set()
    await asyncio.wait_for(task, 1)


@pytest.mark.parametrize("stopped", [True, False])
async def test_wait_or_stop_says_whether_stop_is_set(stopped: bool) -> None:
    stop = asyncio.Event()
    if stopped:
        stop.set()
    loop = asyncio.get_running_loop()
    started = loop.time()
    assert await wait_or_stop(stop, 0.05) is stopped
    assert (loop.time() - started < 0.04) is stopped  # a set stop returns at once, else after the timeout
