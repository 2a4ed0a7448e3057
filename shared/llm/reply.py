"""Pure decoding of an assistant reply: JSON content (optionally fenced) into a type.

Models asked for JSON still wrap it in a markdown fence or add a sentence around it.
``decode_json_content`` accepts, in order: the whole text as JSON, the first fenced
code block (```json ... ``` or plain ```), and the span from the first ``{`` to the
last ``}``. Anything else raises ``LlmBadReply`` saying why (with msgspec's path for
a shape error). ``reply_items`` and ``convert_items`` read a list of items out of a
decoded reply leniently, so one malformed item never breaks its batch.
"""

from __future__ import annotations

import re
from typing import Any, Final, TypeVar

import msgspec

from ..tokens import estimate_tokens
from .errors import LlmBadReply

T = TypeVar("T")

_FENCE: Final = re.compile(r"```[ \t]*[A-Za-z0-9_+-]*[ \t]*\r?\n(.*?)```", re.DOTALL)
MAX_SNIPPET = 200


def _candidates(text: str) -> list[str]:
    out = [text.strip()]
    fenced = _FENCE.search(text)
    if fenced is not None:
        out.append(fenced.group(1).strip())
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        out.append(text[start : end + 1])
    return [c for i, c in enumerate(out) if c and c not in out[:i]]


def decode_json_content(content: str, tp: type[T]) -> T:
    """Decode ``content`` into ``tp``; ``LlmBadReply`` when no candidate decodes."""
    if not content.strip():
        raise LlmBadReply("the model returned empty content")
    shape_error: msgspec.ValidationError | None = None
    for candidate in _candidates(content):
        try:
            return msgspec.json.decode(candidate, type=tp)
        except msgspec.ValidationError as exc:
            shape_error = shape_error or exc
        except msgspec.DecodeError:
            continue
    if shape_error is not None:
        raise LlmBadReply(f"reply JSON has the wrong shape: {shape_error}")
    raise LlmBadReply(f"reply is not JSON: {snippet(content)!r}")


def reply_items(decoded: object, key: str) -> list[object]:
    """The items of a decoded reply: ``decoded[key]`` or the bare list itself; ``LlmBadReply``
    when there is no such list."""
    if isinstance(decoded, list):
        return decoded
    if isinstance(decoded, dict):
        items = decoded.get(key)
        if isinstance(items, list):
            return items
    raise LlmBadReply(f"reply has no `{key}` list")


def convert_items(items: list[object], kind: type[T]) -> tuple[list[T], list[str]]:
    """Convert each item to ``kind`` leniently (``"0"`` -> 0); the converted items and one
    problem per rejected item."""
    converted: list[T] = []
    problems: list[str] = []
    for index, item in enumerate(items):
        try:
            converted.append(msgspec.convert(item, kind, strict=False))
        except (msgspec.ValidationError, ValueError, TypeError) as exc:
            problems.append(f"item {index}: {exc}")
    return converted, problems


def snippet(text: str, limit: int = MAX_SNIPPET) -> str:
    """The start of ``text`` for an error message."""
    return text if len(text) <= limit else text[:limit] + "…"


def estimate_prompt_tokens(messages: list[dict[str, Any]]) -> int:
    return sum(estimate_tokens(str(m.get("content") or "")) for m in messages)
