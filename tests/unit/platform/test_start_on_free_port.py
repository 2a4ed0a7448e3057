"""Starting an embedded server: a new free port per attempt, one attempt for a port asked for."""

from __future__ import annotations

import pytest

from memoryd.local.process import start_on_free_port


def _starter(results: list[bool]) -> tuple[list[int], object]:
    calls: list[int] = []

    def start_once() -> bool:
        calls.append(len(calls))
        return results[len(calls) - 1]

    return calls, start_once


@pytest.mark.parametrize(
    ("results", "fixed", "started", "attempts"),
    [
        ([True], False, True, 1),
        ([False, False, True], False, True, 3),
        ([False, False, False], False, False, 3),
        ([False, True], True, False, 1),  # the user's port: no second try on another one
    ],
)
def test_attempts(results: list[bool], fixed: bool, started: bool, attempts: int) -> None:
    calls, start_once = _starter(results)
    assert start_on_free_port(start_once, fixed_port=fixed) is started  # type: ignore[arg-type]
    assert len(calls) == attempts


def test_an_error_is_not_retried() -> None:
    calls: list[int] = []

    def start_once() -> bool:
        calls.append(1)
        raise OSError("no binary")

    with pytest.raises(OSError, match="no binary"):
        start_on_free_port(start_once, fixed_port=False)
    assert calls == [1]
