"""The LLM tokens a proxied call spent, as the upstream reports them (``usage``).

A whole answer carries ``usage``; a streamed chat completion carries it in a last chunk with no
choices when the request says ``stream_options.include_usage`` (a Responses API stream always
does, in ``response.completed``). The proxy asks for that chunk when it counts
a key's tokens; when the caller did not ask for it, ``SseUsage`` takes it out of the stream, so
the caller gets what it asked for. An upstream that reports no usage is charged an estimate
(a token per four bytes of request and answer), so it cannot spend a budget for free.
"""

from __future__ import annotations

import re
from typing import Any

from .chat import upstream_json

_EVENT_END = re.compile(rb"\r?\n\r?\n")


def usage_tokens(obj: Any) -> int | None:
    """Input + output tokens of an answer's (or chunk's) ``usage``; None when it has none.

    Chat completions say ``prompt_tokens``/``completion_tokens``; the Responses API says
    ``input_tokens``/``output_tokens``, in a stream inside its ``response.completed`` event.
    """
    if isinstance(obj, dict) and isinstance(obj.get("response"), dict):
        obj = obj["response"]
    usage = obj.get("usage") if isinstance(obj, dict) else None
    if not isinstance(usage, dict):
        return None
    for names in (("prompt_tokens", "completion_tokens"), ("input_tokens", "output_tokens")):
        parts = [usage.get(name) for name in names]
        if all(isinstance(p, int) and p >= 0 for p in parts):
            return int(parts[0]) + int(parts[1])  # type: ignore[arg-type]
    total = usage.get("total_tokens")
    return total if isinstance(total, int) and total >= 0 else None


def estimate(request_bytes: int, answer_bytes: int) -> int:
    """The tokens charged when the upstream reports none: a token per four bytes, at least one."""
    return max(1, (request_bytes + answer_bytes + 3) // 4)


def ask_for_usage(body: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """A streamed request asking for the usage chunk, and whether the caller had not asked for it."""
    if body.get("stream") is not True:
        return body, False
    options = body.get("stream_options")
    if isinstance(options, dict) and options.get("include_usage") is True:
        return body, False
    options = options if isinstance(options, dict) else {}
    return {**body, "stream_options": {**options, "include_usage": True}}, True


def _usage_only(data: Any) -> bool:
    return isinstance(data, dict) and data.get("choices") == [] and isinstance(data.get("usage"), dict)


class SseUsage:
    """Reads the usage of an SSE stream fed chunk by chunk; with ``strip``, drops the usage-only chunk.

    Without ``strip`` every chunk passes unchanged; with it, whole events pass (a chunk boundary
    may move to an event boundary) and the usage-only event is held back. With ``read`` False
    (nobody counts this key's tokens) it only counts the bytes: no event is parsed.
    """

    def __init__(self, *, strip: bool, read: bool = True) -> None:
        self.strip = strip
        self.read = read or strip
        self.tokens: int | None = None
        self.seen = 0  # bytes of the answer
        self._buffer = b""

    def feed(self, chunk: bytes) -> bytes:
        """What to pass on of ``chunk``."""
        self.seen += len(chunk)
        if not self.read:
            return chunk
        self._buffer += chunk
        out: list[bytes] = []
        while match := _EVENT_END.search(self._buffer):
            event, self._buffer = self._buffer[: match.end()], self._buffer[match.end() :]
            data = self._data(event)
            found = usage_tokens(data)
            if found is not None:
                self.tokens = found
            if not (self.strip and _usage_only(data)):
                out.append(event)
        if not self.strip:
            return chunk
        return b"".join(out)

    def flush(self) -> bytes:
        """What is left of the stream after its last chunk (an event without its blank line)."""
        rest, self._buffer = self._buffer, b""
        return rest if self.strip else b""

    @staticmethod
    def _data(event: bytes) -> Any:
        lines = [line[5:].strip() for line in event.splitlines() if line.startswith(b"data:")]
        data = b"\n".join(lines)
        if not data or data == b"[DONE]":
            return None
        return upstream_json(data)
