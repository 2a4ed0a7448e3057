"""Tolerant decoding of LLM JSON replies shared by the sleep phases that call an LLM.

A reply is accepted as a JSON object holding a list under a known key (`{"decisions": [...]}`)
or as the bare list, optionally wrapped in one markdown code fence. A reply that is not
JSON or has no such list raises `LlmReplyError` (the batch is broken). Items are converted
one by one, leniently (`"0"` -> 0), so one malformed item never breaks its batch.
"""

import re
from typing import Final, TypeVar

import msgspec

T = TypeVar("T")

_FENCE: Final = re.compile(r"^\s*```[A-Za-z0-9_-]*[ \t]*\n(.*?)\n?[ \t]*```\s*$", re.DOTALL)


class LlmReplyError(ValueError):
    """An LLM reply that cannot be decoded at all: the batch that asked for it is broken."""


def decode_llm_json(raw: bytes | str) -> object:
    """Decode a reply into builtins, unwrapping one surrounding code fence."""
    if isinstance(raw, bytes):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise LlmReplyError(f"reply is not UTF-8: {exc.reason}") from None
    else:
        text = raw
    fenced = _FENCE.match(text)
    if fenced is not None:
        text = fenced.group(1)
    if not text.strip():
        raise LlmReplyError("reply is empty")
    try:
        return msgspec.json.decode(text)
    except msgspec.DecodeError as exc:
        raise LlmReplyError(f"reply is not JSON: {exc}") from None


def reply_items(decoded: object, key: str) -> list[object]:
    """The list of items of a decoded reply: `decoded[key]` or the bare list itself."""
    if isinstance(decoded, list):
        return decoded
    if isinstance(decoded, dict):
        items = decoded.get(key)
        if isinstance(items, list):
            return items
    raise LlmReplyError(f"reply has no `{key}` list")


def convert_items(items: list[object], kind: type[T]) -> tuple[list[T], list[str]]:
    """Convert each item to `kind`; returns the converted items and one problem per reject."""
    converted: list[T] = []
    problems: list[str] = []
    for index, item in enumerate(items):
        try:
            converted.append(msgspec.convert(item, kind, strict=False))
        except (msgspec.ValidationError, ValueError, TypeError) as exc:
            problems.append(f"item {index}: {exc}")
    return converted, problems
