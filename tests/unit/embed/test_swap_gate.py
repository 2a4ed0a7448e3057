"""The swap gate: a swap waits for the batches in flight and holds new ones until it is done."""

from __future__ import annotations

import asyncio

from services.embed.gate import SwapGate


async def test_swap_waits_for_users_and_holds_new_ones() -> None:
    gate = SwapGate()
    events: list[str] = []
    release_first = asyncio.Event()

    async def batch(name: str, hold: asyncio.Event | None = None) -> None:
        async with gate.use():
            events.append(f"{name} start")
            if hold is not None:
                await hold.wait()
            events.append(f"{name} end")

    async def swap() -> None:
        async with gate.exclusive():
            events.append("swap")

    first = asyncio.create_task(batch("b1", release_first))
    await asyncio.sleep(0)
    swapping = asyncio.create_task(swap())
    await asyncio.sleep(0)
    later = asyncio.create_task(batch("b2"))
    await asyncio.sleep(0.01)
    assert events == ["b1 start"] and gate.users == 1  # the swap waits, b2 waits behind it
    release_first.set()
    await asyncio.gather(first, swapping, later)
    assert events == ["b1 start", "b1 end", "swap", "b2 start", "b2 end"]


async def test_a_cancelled_swap_reopens_the_gate() -> None:
    gate = SwapGate()
    hold = asyncio.Event()

    async def batch() -> None:
        async with gate.use():
            await hold.wait()

    user = asyncio.create_task(batch())
    await asyncio.sleep(0)

    async def swap() -> None:
        async with gate.exclusive():
            pass

    swapping = asyncio.create_task(swap())
    await asyncio.sleep(0.01)
    swapping.cancel()
    await asyncio.sleep(0)
    async with asyncio.timeout(1):
        async with gate.use():  # not held back by the abandoned swap
            pass
    hold.set()
    await user
