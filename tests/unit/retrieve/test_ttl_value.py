"""``TtlValue``: one value re-read at most every ``ttl_s`` seconds, or at once after ``invalidate``."""

from __future__ import annotations

from services.retrieve.ttl import TtlValue


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


async def test_value_is_kept_for_its_ttl_then_read_again() -> None:
    reads: list[float] = []
    clock = Clock()

    async def load() -> int:
        reads.append(clock.now)
        return len(reads)

    value = TtlValue(load, 5.0, clock=clock)
    assert await value.get() == 1
    clock.now = 4.9
    assert await value.get() == 1
    clock.now = 5.0
    assert await value.get() == 2
    value.invalidate()
    assert await value.get() == 3
    assert reads == [0.0, 5.0, 5.0]
