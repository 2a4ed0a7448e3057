"""The gateway's pure parts: who acts for whom, reading chat requests, placing memory, SSE text,
problem documents, the OpenAPI document and the API key format."""

from __future__ import annotations

import pytest

from memoryd.errors import Forbidden, ValidationFailed
from services.gateway.handlers.common import problem_response
from services.gateway.logic.auth import acting_owner, bearer_token
from services.gateway.logic.chat import SseText, apply_memory, content_text, last_user_text, truthy, turns
from services.gateway.logic.openapi import document
from services.gateway.logic.problem import problem
from services.gateway.routes import ROUTES
from shared.api_keys import matches, new_key, parse_key


def test_owner_keys_act_only_for_their_owner() -> None:
    assert acting_owner("owner", "a", [None, "", "a"], required=True) == "a"
    with pytest.raises(Forbidden, match="not 'b'"):
        acting_owner("owner", "a", ["a", "b"], required=False)


def test_operator_keys_name_exactly_one_owner_when_needed() -> None:
    assert acting_owner("operator", None, [None, "b"], required=True) == "b"
    assert acting_owner("operator", None, [None, None], required=False) is None
    with pytest.raises(ValidationFailed, match=r"\$\.owner"):
        acting_owner("operator", None, [], required=True)
    with pytest.raises(ValidationFailed, match="several owners"):
        acting_owner("operator", None, ["a", "b"], required=True)


def test_bearer_token() -> None:
    assert bearer_token("Bearer  mk_x ") == "mk_x"
    assert bearer_token("bearer mk_x") == "mk_x"
    assert bearer_token("Basic abc") is None
    assert bearer_token(None, "mk_y") == "mk_y"


def test_keys_are_parsed_and_checked_against_their_hash() -> None:
    token, record = new_key("owner", "alice", name="app")
    key_id, secret = parse_key(token) or ("", "")
    assert key_id == record.id and matches(record, secret) and not matches(record, "0" * 48)
    assert secret not in record.secret_sha256 and record.owner == "alice"
    assert parse_key("mk_123_456") is None and parse_key(token + "x") is None
    with pytest.raises(ValidationFailed):
        new_key("owner", None)
    with pytest.raises(ValidationFailed):
        new_key("operator", "alice")


def test_no_memory_header_values() -> None:
    assert all(truthy(v) for v in ("true", "1", "yes", "YES", " True "))
    assert not any(truthy(v) for v in (None, "", "no", "0", "false"))


def test_content_parts_are_read_as_text() -> None:
    parts = [{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {}}, {"type": "input_text", "text": "b"}]
    assert content_text(parts) == "a\nb"
    assert content_text(None) == ""
    messages = [
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "x"},
        {"role": "user", "content": parts},
    ]
    assert last_user_text(messages) == "a\nb"


def test_turns_keep_text_and_add_the_reply() -> None:
    messages = [
        {"role": "system", "content": "be brief"},
        {"role": "assistant", "content": None, "tool_calls": [{}]},
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"role": "robot", "content": "?"},
    ]
    out = turns(messages, "hello")
    assert [(m.role, m.content) for m in out] == [("user", "hi"), ("assistant", "hello")]


def test_memory_is_placed_without_touching_the_callers_messages() -> None:
    messages = [{"role": "system", "content": "sys"}, {"role": "user", "content": "q", "name": "u"}]
    system = apply_memory(messages, "Memory context:\n- m", "system")
    assert system[0] == {"role": "system", "content": "Memory context:\n- m"} and system[1:] == messages
    user = apply_memory(messages, "Memory context:\n- m", "user")
    assert user[1] == {"role": "user", "content": "Memory context:\n- m\n\n---\n\nq", "name": "u"}
    assert messages[1]["content"] == "q"
    parts = apply_memory([{"role": "user", "content": [{"type": "text", "text": "q"}]}], "M", "user")
    assert parts[0]["content"] == [{"type": "text", "text": "M"}, {"type": "text", "text": "q"}]
    assert apply_memory(messages, "", "system") == messages
    assert apply_memory(messages, "M", "none") == messages


def test_sse_text_survives_chunks_split_anywhere() -> None:
    stream = (
        b'data: {"choices":[{"delta":{"role":"assistant","content":"Hel"}}]}\n\n'
        b'data: {"choices":[{"delta":{"content":"lo"}}]}\n\n'
        b"data: not json\n\n"
        b'data: {"choices":[{"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
    )
    for size in (1, 7, len(stream)):
        sse = SseText()
        for i in range(0, len(stream), size):
            sse.feed(stream[i : i + size])
        assert sse.text == "Hello"


def test_problem_documents_carry_the_field_path_the_error_carries() -> None:
    import json

    from memoryd.errors import NotFound, ValidationFailed

    doc = problem(400, "validation", "Expected `int` - at `$.limit`", field="$.limit")
    assert (doc.status, doc.field, doc.type) == (400, "$.limit", "urn:memoryd:error:validation")
    body = json.loads(problem_response(ValidationFailed("Expected `str`", field="$.messages[0].content")).body)
    assert (body["status"], body["field"]) == (400, "$.messages[0].content")
    assert "field" not in json.loads(problem_response(NotFound("at `$.x`")).body)


def test_openapi_has_every_route_with_problem_errors() -> None:
    doc = document(ROUTES, version="test")
    assert doc["openapi"] == "3.1.0"
    operations = {op["operationId"] for methods in doc["paths"].values() for op in methods.values()}
    assert {r.name for r in ROUTES} <= operations
    create = doc["paths"]["/v1/memories"]["post"]
    body = doc["components"]["schemas"]["MemoryCreateRequestBody"]
    assert create["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("MemoryCreateRequestBody")
    assert "owner" not in body["required"] and "content" in body["required"]
    assert create["responses"]["400"]["content"]["application/problem+json"]["schema"]["$ref"].endswith("/Problem")
    listing = {p["name"] for p in doc["paths"]["/v1/memories"]["get"]["parameters"]}
    assert {"memory_type", "session_id", "q", "state", "limit", "offset", "page", "owner"} <= listing
