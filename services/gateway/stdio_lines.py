"""The lines an MCP client sends over stdio, checked before the MCP SDK parses them.

The SDK's stdio transport drops a line it cannot parse without answering it, so a request
nested deeper than ``MAX_JSON_DEPTH`` (its parser refuses those) would leave the client waiting
for its id forever. ``Lines`` passes every other line on and answers such a request with a
JSON-RPC error (``-32600``, its message naming ``validation`` as every door does), under the id
read from the request's top level (``request_id``; none found: nobody waits, nothing is sent).
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable

from mcp.shared.message import SessionMessage
from mcp.types import INVALID_REQUEST, ErrorData, JSONRPCError

from memoryd.schemas.depth import MAX_JSON_DEPTH, json_depth_exceeds

TOO_DEEP = f"validation: JSON nests deeper than {MAX_JSON_DEPTH} levels"
_ID = re.compile(r'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")')
_ESCAPE = re.compile(r"\\.", re.DOTALL)
_STRING = re.compile(r'"[^"]*"')
#: brackets before a request's id beyond which it is not looked for (an id comes first in practice)
_MAX_PREFIX_BRACKETS = 256


def request_id(line: str) -> int | str | None:
    """The ``id`` member of the JSON object ``line`` at its top level, without parsing the rest."""
    for match in _ID.finditer(line):
        prefix = _ESCAPE.sub("", line[: match.start()])
        if prefix.count('"') % 2:  # the match is inside a string
            continue
        brackets = [c for c in _STRING.sub("", prefix) if c in "[]{}"]
        if len(brackets) > _MAX_PREFIX_BRACKETS:
            return None
        depth = 0
        for c in brackets:
            depth += 1 if c in "[{" else -1
        if depth == 1 and brackets[:1] == ["{"]:
            value = json.loads(match.group(1))  # a number or a string: nothing nests
            return value if isinstance(value, int | str) else None
    return None


def refusal(rid: int | str) -> SessionMessage:
    """The answer to request ``rid``, nested too deep to parse."""
    return SessionMessage(JSONRPCError(jsonrpc="2.0", id=rid, error=ErrorData(code=INVALID_REQUEST, message=TOO_DEEP)))


class Lines:
    """``stdin`` for the SDK's stdio transport: its lines, but those too deep to parse, which are
    answered through ``answer`` (the transport's write stream, set once it is open)."""

    def __init__(self, stdin: AsyncIterable[str]) -> None:
        self._stdin = stdin
        self.answer: Callable[[SessionMessage], Awaitable[None]] | None = None

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        async for line in self._stdin:
            if json_depth_exceeds(line):
                rid = request_id(line)
                if rid is not None and self.answer is not None:
                    await self.answer(refusal(rid))
                continue
            yield line
