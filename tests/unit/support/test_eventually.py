"""The tests' one polling helper: returns the first truthy value, fails naming what it awaited."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.eventually import eventually


async def test_returns_the_first_truthy_value_of_the_check() -> None:
    answers: Iterator[object] = iter([None, 0, [], "ready", "later"])

    async def check() -> object:
        return next(answers)

    assert await eventually(check, "the answer", interval=0.001) == "ready"
    assert next(answers) == "later"  # polled no further than the first truthy value


async def test_a_timeout_names_what_was_awaited_and_the_state_seen() -> None:
    calls = 0

    async def never() -> bool:
        nonlocal calls
        calls += 1
        return False

    async def state() -> str:
        return f"{calls} checks"

    with pytest.raises(AssertionError) as raised:
        await eventually(never, "the impossible", timeout=0.05, interval=0.01, state=state)
    assert str(raised.value) == f"timed out after 0.05 s waiting for the impossible; state: {calls} checks"
    assert calls >= 2
