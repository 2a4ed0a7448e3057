"""Identifier patterns match the whole value (no trailing newline, no control characters) and
list positions are bounded, so such input is a typed 400 at decoding, never a database error."""

from __future__ import annotations

import uuid

import msgspec
import pytest

from memoryd.codec import decode
from memoryd.errors import ValidationFailed
from memoryd.schemas.base import MAX_OFFSET, MemoryId, Owner
from memoryd.schemas.events import ChatEvent, EventId
from memoryd.schemas.memory import MemoryListRequest


@pytest.mark.parametrize("value", ["bob\n", "bob\r\n", "b\x00b", "bob\u2028", " bob", "bob "])
def test_owner_refuses_newlines_and_controls(value: str) -> None:
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert(value, Owner)


@pytest.mark.parametrize("value", ["msg-1\n", "msg\n-1", "msg\x00", "msg\x1b[2J", "msg\x85", "msg\x7f", "m 1"])
def test_event_id_refuses_newlines_and_controls(value: str) -> None:
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert(value, EventId)


@pytest.mark.parametrize("value", ["msg-1001", "chat:2024-01-01T00:00:00Z", "é-ü-1", "a" * 128])
def test_ordinary_ids_still_pass(value: str) -> None:
    assert msgspec.convert(value, EventId) == value


def test_memory_id_refuses_a_trailing_newline() -> None:
    good = str(uuid.uuid4())
    assert msgspec.convert(good, MemoryId) == good
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert(good + "\n", MemoryId)


def test_a_chat_event_with_a_newline_in_its_owner_is_a_validation_error() -> None:
    raw = b'{"type":"mem.v1.chat_event","event_id":"e1","owner":"bob\\n","occurred_at":"2024-01-01T00:00:00Z",'
    raw += b'"messages":[{"role":"user","content":"hi"}]}'
    with pytest.raises(ValidationFailed, match=r"\$\.owner"):
        decode(raw, ChatEvent)


@pytest.mark.parametrize(
    ("fields", "path"),
    [
        ({"offset": MAX_OFFSET + 1}, "$.offset"),
        ({"offset": 2**63}, "$.offset"),
        ({"offset": -1}, "$.offset"),
        ({"page": MAX_OFFSET + 1}, "$.page"),
        ({"page": 10**30}, "$.page"),
        ({"page": 0}, "$.page"),
    ],
)
def test_list_positions_are_bounded(fields: dict[str, int], path: str) -> None:
    with pytest.raises(msgspec.ValidationError, match=rf"at `\{path}`"):
        msgspec.convert({"owner": "bob", **fields}, MemoryListRequest)


def test_the_deepest_listing_still_fits_a_database_integer() -> None:
    deepest = msgspec.convert(
        {"owner": "bob", "page": MAX_OFFSET, "limit": 1000, "offset": MAX_OFFSET}, MemoryListRequest
    )
    assert deepest.page is not None and (deepest.page - 1) * deepest.limit < 2**63
