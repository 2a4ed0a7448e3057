"""``shared.bus.kv_keys.all_keys``: nats-py's "no keys" is believed only for a bucket with no
messages, else asked again (a premature answer made every owner look idle to the scheduler)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from nats.js.errors import NoKeysError

from shared.bus.kv_keys import ATTEMPTS, all_keys


@dataclass
class _Status:
    values: int


@dataclass
class _Kv:
    answers: list[list[str] | None]  # None: keys() raises NoKeysError
    messages: int
    calls: list[str] = field(default_factory=list)

    async def keys(self) -> list[str]:
        self.calls.append("keys")
        answer = self.answers.pop(0)
        if answer is None:
            raise NoKeysError
        return answer

    async def status(self) -> _Status:
        self.calls.append("status")
        return _Status(self.messages)


async def keys_of(kv: _Kv) -> list[str]:
    bucket: Any = kv
    return await all_keys(bucket)


async def test_a_premature_no_keys_is_asked_again() -> None:
    kv = _Kv([None, ["last.busy"]], messages=1)
    assert await keys_of(kv) == ["last.busy"]
    assert kv.calls == ["keys", "status", "keys"]


async def test_an_empty_bucket_has_no_keys_at_once() -> None:
    kv = _Kv([None], messages=0)
    assert await keys_of(kv) == []
    assert kv.calls == ["keys", "status"]


async def test_a_bucket_of_delete_markers_only_stops_asking() -> None:
    kv = _Kv([None] * ATTEMPTS, messages=2)
    assert await keys_of(kv) == []
    assert kv.calls.count("keys") == ATTEMPTS
