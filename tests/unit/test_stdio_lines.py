"""MCP over stdio: a request nested too deep for the SDK to parse is answered with a typed
JSON-RPC error under its id (the SDK would drop it unanswered); every other line passes on."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest
from mcp.types import JSONRPCError

from services.gateway.stdio_lines import TOO_DEEP, Lines, request_id
from tests.support.hostile import deep_objects


def _call(rid: str, depth: int) -> str:
    params = '{"name":"memory_add","arguments":' + deep_objects(depth).decode() + "}"
    return '{"jsonrpc":"2.0","id":' + rid + ',"method":"tools/call","params":' + params + "}"


def test_the_id_is_read_from_the_top_level_only() -> None:
    assert request_id(_call("7", 10_000)) == 7
    assert request_id(_call('"a\\"b"', 10_000)) == 'a"b'
    assert request_id('{"params":{"id":3},"id":-4}') == -4  # a nested "id" is not the request's
    assert request_id('{"method":"x","params":{"text":"\\"id\\":5"}}') is None  # inside a string
    assert request_id('{"jsonrpc":"2.0","method":"notifications/x"}') is None  # a notification
    assert request_id('[{"id":1}]') is None  # a batch is no request


async def _through(lines: list[str]) -> tuple[list[str], list[object]]:
    async def source() -> AsyncIterator[str]:
        for line in lines:
            yield line

    answered: list[object] = []

    async def answer(message: object) -> None:
        answered.append(message)

    filtered = Lines(source())
    filtered.answer = answer
    return [line async for line in filtered], answered


@pytest.mark.parametrize("depth", [70, 10_000, 100_000])
async def test_a_deep_request_is_answered_and_kept_from_the_sdk(depth: int) -> None:
    ok = '{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
    shallow = _call("2", 10) + "\n"
    passed, answered = await _through([ok, _call("9", depth) + "\n", shallow, deep_objects(depth).decode() + "\n"])
    assert passed == [ok, shallow]  # the second deep line has no id: nobody waits for it
    assert len(answered) == 1
    error = answered[0].message  # type: ignore[attr-defined]
    assert isinstance(error, JSONRPCError) and error.id == 9
    assert (error.error.code, error.error.message) == (-32600, TOO_DEEP)
    assert json.loads(shallow)["id"] == 2
