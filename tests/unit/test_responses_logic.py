"""The Responses API's pure parts (services/gateway/logic/responses.py) on hand-written payloads:
the query and the remembered turns, where memory goes, the answer's text whole and streamed."""

from __future__ import annotations

import json

import pytest

from memoryd.errors import ValidationFailed
from services.gateway.logic.chat import USER_BLOCK_SEPARATOR, last_user_text, turns
from services.gateway.logic.responses import OutputTextDeltas, inject, input_messages, output_text

AGENT_INPUT = [
    {"role": "system", "content": "You are terse."},
    {"role": "developer", "content": "Never mention the weather."},
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "I prefer Rust."}]},
    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Noted.", "annotations": []}]},
    {"type": "function_call", "call_id": "c1", "name": "lookup", "arguments": '{"q": "secret call"}'},
    {"type": "function_call_output", "call_id": "c1", "output": "secret tool output"},
    {"type": "reasoning", "id": "rs_1", "summary": []},
    {"role": "user", "content": [{"type": "input_image", "image_url": "data:,"}]},
    {"role": "user", "content": "Which language for my CLI?"},
]


def test_a_string_input_is_one_user_turn_and_the_query() -> None:
    messages = input_messages("What did I decide about databases?")
    assert messages == [{"role": "user", "content": "What did I decide about databases?"}]
    assert last_user_text(messages) == "What did I decide about databases?"
    assert input_messages(None) == []


def test_the_query_is_the_last_user_items_text() -> None:
    assert last_user_text(input_messages(AGENT_INPUT)) == "Which language for my CLI?"
    parts = [
        {"role": "user", "content": [{"type": "input_text", "text": "one"}, {"type": "input_text", "text": "two"}]}
    ]
    assert last_user_text(input_messages(parts)) == "one\ntwo"
    only_image = [*AGENT_INPUT[:3], AGENT_INPUT[7]]
    assert last_user_text(input_messages(only_image)) == "I prefer Rust."


def test_only_user_and_assistant_text_is_remembered() -> None:
    remembered = [(m.role, m.content) for m in turns(input_messages(AGENT_INPUT), "Use Rust with clap.")]
    assert remembered == [
        ("user", "I prefer Rust."),
        ("assistant", "Noted."),
        ("user", "Which language for my CLI?"),
        ("assistant", "Use Rust with clap."),
    ]
    assert not any("secret" in text or "terse" in text or "weather" in text for _, text in remembered)


def test_an_input_of_another_type_is_a_400_at_its_path() -> None:
    with pytest.raises(ValidationFailed) as err:
        input_messages({"role": "user", "content": "hi"})
    assert err.value.field == "$.input"
    with pytest.raises(ValidationFailed) as err:
        inject({"input": "hi", "instructions": ["not", "text"]}, "Memory context: x", "system")
    assert err.value.field == "$.instructions"


def test_memory_goes_ahead_of_the_callers_instructions_which_are_kept_verbatim() -> None:
    body = {"model": "m", "input": "hi", "instructions": "Be brief.", "previous_response_id": "resp_1", "store": True}
    out = inject(body, "Memory context: likes Rust", "system")
    assert out == {**body, "instructions": f"Memory context: likes Rust{USER_BLOCK_SEPARATOR}Be brief."}
    assert out["instructions"].endswith("Be brief.") and body["instructions"] == "Be brief."  # input unchanged
    assert inject({"input": "hi"}, "Memory context: x", "system") == {
        "input": "hi",
        "instructions": "Memory context: x",
    }
    assert inject({"input": "hi", "instructions": None}, "M", "system")["instructions"] == "M"


def test_memory_for_providers_without_a_system_role_is_a_leading_user_message() -> None:
    body = {"input": "hi", "instructions": "Be brief."}
    out = inject(body, "Memory context: x", "user")
    assert out == {"input": [{"role": "user", "content": "Memory context: x"}, {"role": "user", "content": "hi"}],
                   "instructions": "Be brief."}  # fmt: skip
    listed = inject({"input": AGENT_INPUT}, "M", "user")["input"]
    assert listed[0] == {"role": "user", "content": "M"} and listed[1:] == AGENT_INPUT


def test_no_memory_leaves_the_body_as_it_came() -> None:
    body = {"input": "hi", "instructions": "Be brief."}
    assert inject(body, "Memory context: x", "none") is body
    assert inject(body, "  ", "system") is body


def test_the_answer_text_is_the_assistant_messages_output_text() -> None:
    response = {
        "id": "resp_1",
        "object": "response",
        "output": [
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "thinking"}]},
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
            {"type": "message", "role": "assistant",
             "content": [{"type": "output_text", "text": "Use Rust."}, {"type": "refusal", "refusal": "no"}]},
        ],
    }  # fmt: skip
    assert output_text(json.dumps(response).encode()) == "Use Rust."
    assert output_text(json.dumps({"output": [], "output_text": "flat"}).encode()) == "flat"
    assert output_text(b"not json") == "" and output_text(b"[1]") == "" and output_text(b'{"output": 3}') == ""


def _event(kind: str, **fields: object) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **fields})}\n\n".encode()


def test_streamed_text_is_the_deltas_whatever_the_chunking() -> None:
    at = {"item_id": "msg_1", "output_index": 0, "content_index": 0}
    stream = b"".join([
        _event("response.created", response={"id": "resp_1", "output": []}),
        _event("response.output_text.delta", **at, delta="Use "),
        b": keep-alive comment\n\n",
        _event("response.output_text.delta", **at, delta="Rust."),
        _event("response.function_call_arguments.delta", item_id="fc_1", delta='{"secret": 1}'),
        _event("response.output_text.done", **at, text="Use Rust."),
        _event("response.output_text.delta", item_id="msg_2", output_index=1, content_index=0, delta="Really."),
        _event("response.completed", response={"id": "resp_1", "usage": {"input_tokens": 3}}),
    ])  # fmt: skip
    for size in (1, 5, 64, len(stream)):
        deltas = OutputTextDeltas()
        for i in range(0, len(stream), size):
            deltas.feed(stream[i : i + size])
        assert deltas.text == "Use Rust.\nReally."
