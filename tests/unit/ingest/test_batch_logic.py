"""``memory.batch`` item rules: content or messages, the same checks as their own RPC and
event, and an item's error placed at its path in the batch request."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memoryd.codec import decode, encode
from memoryd.errors import ValidationFailed
from memoryd.schemas import ChatEvent, ChatMessage
from memoryd.schemas.memory import BatchItem, BatchItemResult, MemoryCreateRequest
from memoryd.schemas.ops import RpcError
from services.ingest.logic import batch as logic
from services.ingest.logic.chat import check_event

NOW = datetime(2026, 3, 1, tzinfo=UTC)


def create_request(owner: str, item: BatchItem) -> MemoryCreateRequest:
    """As the handler decodes a content item."""
    return decode(encode(logic.create_fields(owner, item)), MemoryCreateRequest)


def chat_event(owner: str, item: BatchItem) -> ChatEvent:
    """As the handler decodes and checks a messages item."""
    event = decode(encode(logic.event_fields(owner, item, NOW)), ChatEvent)
    check_event(event)
    return event


def test_an_item_is_content_or_messages() -> None:
    assert logic.is_content(BatchItem(content="x"), 0)
    assert not logic.is_content(BatchItem(messages=[ChatMessage(role="user", content="hi")]), 0)
    for item in (BatchItem(), BatchItem(content="x", messages=[ChatMessage(role="user", content="hi")])):
        with pytest.raises(ValidationFailed) as bad:
            logic.is_content(item, 4)
        assert bad.value.field == "$.items[4]"


def test_content_items_are_checked_as_memory_create() -> None:
    req = create_request("alice", BatchItem(content="Likes tea", key="k", metadata={"a": 1}, session_id="s"))
    assert (req.owner, req.content, req.key, req.metadata, req.session_id) == ("alice", "Likes tea", "k", {"a": 1}, "s")
    assert (req.memory_type, req.scope) == ("factual", "apiKey")
    for item, field in (
        (BatchItem(content=""), "$.content"),
        (BatchItem(content="x" * 70_000), "$.content"),
        (BatchItem(content="x", memory_type="tasks"), "$.memory_type"),
        (BatchItem(content="x", key=""), "$.key"),
    ):
        with pytest.raises(ValidationFailed) as bad:
            create_request("alice", item)
        assert bad.value.field == field


def test_messages_items_become_chat_events() -> None:
    item = BatchItem(messages=[ChatMessage(role="user", content="I love tea")], event_id="e1", session_id="s")
    event = chat_event("alice", item)
    assert (event.event_id, event.owner, event.session_id, event.occurred_at) == ("e1", "alice", "s", NOW)
    assert [m.text for m in event.messages] == ["I love tea"]
    assert len(chat_event("alice", BatchItem(messages=item.messages)).event_id) == 32  # a new id
    with pytest.raises(ValidationFailed) as bad:
        chat_event("alice", BatchItem(messages=item.messages, key="k"))
    assert bad.value.field == "$.key"
    with pytest.raises(ValidationFailed) as nul:
        chat_event("alice", BatchItem(messages=[ChatMessage(role="user", content="a\x00b")]))
    assert "NUL" in nul.value.description


def test_item_errors_are_placed_at_the_item() -> None:
    reply = RpcError(code=400, err_code="validation", description="too short - at `$.content`", field="$.content")
    placed = logic.item_error(reply, 3)
    assert (placed.code, placed.err_code, placed.field) == (400, "validation", "$.items[3].content")
    assert placed.description == "too short - at `$.items[3].content`"
    whole = RpcError(code=400, err_code="validation", description="d", field="$.items[3]")
    assert logic.item_error(whole, 3).field == "$.items[3]"
    nul = RpcError(code=400, err_code="validation", description="a NUL character - at `$.content`")
    assert logic.item_error(nul, 2).field == "$.items[2].content"
    assert logic.item_error(nul, 2).description == "a NUL character - at `$.items[2].content`"
    quota = logic.item_error(RpcError(code=429, err_code="quota_exceeded", description="full"), 0)
    assert (quota.code, quota.err_code, quota.description, quota.field) == (429, "quota_exceeded", "full", None)


def test_the_result_counts_items() -> None:
    result = logic.batch_result(
        [
            BatchItemResult(index=0, event_id="e"),
            BatchItemResult(index=1, error=logic.item_error(RpcError(code=404, err_code="x", description="d"), 1)),
        ]
    )
    assert (result.stored, result.published, result.failed) == (0, 1, 1)
