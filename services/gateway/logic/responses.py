"""The Responses API's pure parts: reading its input as turns, placing memory, reading its answer.

Memory goes into ``instructions``, ahead of the caller's own (kept verbatim after a separator):
the Responses API does not carry ``instructions`` over a ``previous_response_id`` chain, so the
memory of one call never piles up in the upstream's stored conversation, as an input message
would. For providers that reject the system role (``placement == "user"``) it is a leading user
input message instead. Input items other than messages (tool calls, tool outputs, reasoning,
references) are never read as turns, so only user and assistant text is remembered.
"""

from __future__ import annotations

from typing import Any

from memoryd.errors import ValidationFailed

from .chat import USER_BLOCK_SEPARATOR, SseData, content_text, upstream_json

TEXT_DELTA = "response.output_text.delta"


def input_messages(value: Any) -> list[dict[str, Any]]:
    """The message items of a Responses ``input`` in chat form (``role`` and ``content``).

    A string is one user message; of an array only message items count (``type`` absent or
    ``"message"``); no input at all (a stored prompt, a conversation) is no message.
    """
    if value is None:
        return []
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    if not isinstance(value, list):
        raise ValidationFailed.at("$.input", "Expected `str | array`")
    return [
        item
        for item in value
        if isinstance(item, dict) and item.get("type", "message") == "message" and isinstance(item.get("role"), str)
    ]


def checked_instructions(value: Any) -> str | None:
    """The caller's ``instructions`` (a string or nothing); ``ValidationFailed`` for anything else."""
    if value is None or isinstance(value, str):
        return value
    raise ValidationFailed.at("$.instructions", "Expected `str | null`")


def inject(body: dict[str, Any], context: str, placement: str) -> dict[str, Any]:
    """``body`` with the memory block placed as the retrieve service decided; ``body`` unchanged."""
    if placement == "none" or not context.strip():
        return body
    if placement == "system":
        own = checked_instructions(body.get("instructions"))
        return {**body, "instructions": f"{context}{USER_BLOCK_SEPARATOR}{own}" if own else context}
    given = body.get("input")
    items = [{"role": "user", "content": given}] if isinstance(given, str) else list(given or [])
    return {**body, "input": [{"role": "user", "content": context}, *items]}


def output_text(body: bytes) -> str:
    """The assistant text of a non-streamed response: its message items' ``output_text`` parts."""
    response = upstream_json(body)
    if not isinstance(response, dict):
        return ""
    output = response.get("output")
    texts = [
        content_text(item.get("content"))
        for item in (output if isinstance(output, list) else [])
        if isinstance(item, dict) and item.get("type") == "message" and item.get("role") == "assistant"
    ]
    text = "\n".join(t for t in texts if t)
    if not text and isinstance(response.get("output_text"), str):
        return str(response["output_text"])
    return text


class OutputTextDeltas(SseData):
    """Collects the ``response.output_text.delta`` events of a streamed response.

    Deltas of one content part are joined as they come; a new part (another item or content
    index) starts on a new line.
    """

    def __init__(self) -> None:
        super().__init__()
        self._part: tuple[Any, Any, Any] | None = None

    def take(self, payload: dict[str, Any]) -> None:
        delta = payload.get("delta")
        if payload.get("type") != TEXT_DELTA or not isinstance(delta, str) or not delta:
            return
        part = (payload.get("item_id"), payload.get("output_index"), payload.get("content_index"))
        if self._part is not None and part != self._part:
            self.parts.append("\n")
        self._part = part
        self.parts.append(delta)
