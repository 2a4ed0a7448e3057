"""The chat proxy's pure parts: reading OpenAI chat requests and replies, placing memory, SSE.

The retrieve service decides *where* memory goes (``InjectResult.placement``) and renders it
(``InjectResult.context``); ``apply_memory`` puts that block into the caller's own messages, so
content parts, tool calls and unknown fields pass to the upstream untouched.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any

import msgspec

from memoryd.schemas.base import MAX_MESSAGE_CHARS, MAX_MESSAGES_PER_EVENT
from memoryd.schemas.depth import json_depth_exceeds
from memoryd.schemas.events import ChatMessage

TRUTHY = frozenset({"true", "1", "yes"})
#: The turns the proxy remembers: the user's and the assistant's. System, developer and tool
#: messages are the application's instructions and data, not what the owner said.
REMEMBERED_ROLES = frozenset({"user", "assistant"})
_TEXT_PARTS = frozenset({"text", "input_text", "output_text"})
USER_BLOCK_SEPARATOR = "\n\n---\n\n"


def truthy(value: str | None) -> bool:
    """``x-memory-no-memory: true|1|yes`` (any case) -> True."""
    return value is not None and value.strip().lower() in TRUTHY


def content_text(content: Any) -> str:
    """A message's text: a string, or the text parts of an OpenAI content-part list joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [p.get("text") for p in content if isinstance(p, dict) and p.get("type") in _TEXT_PARTS]
        return "\n".join(t for t in texts if isinstance(t, str) and t)
    return ""


def last_user_text(messages: Sequence[Any]) -> str:
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            text = content_text(message.get("content"))
            if text.strip():
                return text
    return ""


def turns(messages: Sequence[Any], reply: str | None = None) -> list[ChatMessage]:
    """The request's user and assistant text turns (plus the assistant reply) as chat-event messages.

    Other roles (system, developer, tool, function) and messages without text (tool calls
    only, images only) are left out; NUL characters (no storage takes them) are dropped;
    over-long text is cut to the event limit; at most the last ``MAX_MESSAGES_PER_EVENT``
    turns are kept.
    """
    out: list[ChatMessage] = []
    all_messages = [*messages, *([{"role": "assistant", "content": reply}] if reply else [])]
    for message in all_messages:
        if not isinstance(message, dict) or message.get("role") not in REMEMBERED_ROLES:
            continue
        text = content_text(message.get("content")).replace("\x00", "")[:MAX_MESSAGE_CHARS]
        if not text.strip():
            continue
        name = message["name"].replace("\x00", "") if isinstance(message.get("name"), str) else None
        out.append(ChatMessage(role=message["role"], content=text, name=name[:256] if name else None))
    return out[-MAX_MESSAGES_PER_EVENT:]


def apply_memory(messages: Sequence[Any], context: str, placement: str) -> list[Any]:
    """``messages`` with the memory block placed as the retrieve service decided; input unchanged."""
    out = list(messages)
    if placement == "none" or not context.strip():
        return out
    if placement == "system":
        return [{"role": "system", "content": context}, *out]
    for index, message in enumerate(out):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                out[index] = {**message, "content": f"{context}{USER_BLOCK_SEPARATOR}{content}" if content else context}
                return out
            if isinstance(content, list):
                out[index] = {**message, "content": [{"type": "text", "text": context}, *content]}
                return out
            out.insert(index, {"role": "user", "content": context})
            return out
    return [{"role": "user", "content": context}, *out]


_json = msgspec.json.Decoder()


def upstream_json(data: bytes) -> Any:
    """An upstream's JSON, or None when it is not JSON or nests too deep (it is the upstream's, not ours)."""
    if json_depth_exceeds(data):
        return None
    try:
        return _json.decode(data)
    except (msgspec.DecodeError, RecursionError, ValueError):
        return None


def reply_text(body: bytes) -> str:
    """The assistant text of a non-streamed chat completion (first choice); "" when there is none."""
    try:
        return content_text(upstream_json(body)["choices"][0]["message"]["content"])
    except (KeyError, IndexError, TypeError):
        return ""


class SseData(abc.ABC):
    """The JSON ``data:`` payloads of an SSE stream fed chunk by chunk, handed to ``take`` one by one.

    The framing (lines split across chunks, ``[DONE]``, comments and ``event:`` lines) is read
    here once; what a payload means is the subclass's ``take``. ``text`` is what was collected.
    """

    def __init__(self) -> None:
        self._buffer = b""
        self.parts: list[str] = []

    def feed(self, chunk: bytes) -> None:
        self._buffer += chunk
        *lines, self._buffer = self._buffer.split(b"\n")
        for line in lines:
            line = line.strip()
            if not line.startswith(b"data:"):
                continue
            data = line[5:].strip()
            if not data or data == b"[DONE]":
                continue
            payload = upstream_json(data)
            if isinstance(payload, dict):
                self.take(payload)

    @abc.abstractmethod
    def take(self, payload: dict[str, Any]) -> None:
        """Read one payload of the stream (what it means is the subclass's)."""

    @property
    def text(self) -> str:
        return "".join(self.parts)


class SseText(SseData):
    """Collects the first choice's ``delta.content`` of a streamed chat completion."""

    def take(self, payload: dict[str, Any]) -> None:
        try:
            delta = payload["choices"][0].get("delta") or {}
        except (KeyError, IndexError, TypeError, AttributeError):
            return
        text = content_text(delta.get("content")) if isinstance(delta, dict) else ""
        if text:
            self.parts.append(text)
