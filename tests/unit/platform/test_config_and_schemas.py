"""Configuration loading and wire schemas: clear errors, tags, round trips, exported schemas."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import msgspec
import pytest

from memoryd.codec import decode, encode, export_json_schemas, wire_types
from memoryd.errors import ConfigError, TooLarge, ValidationFailed
from memoryd.schemas import RPC_OPS, ChatEvent, ChatMessage
from memoryd.schemas.base import snake_name, wire_tag
from shared.service_names import BACKEND_SERVICES
from shared.settings.env import load_service_config

ROOT = Path(__file__).resolve().parents[3]


def test_config_defaults_and_env() -> None:
    cfg = load_service_config({"MEMORYD_NATS_URL": "nats://h:1", "MEMORYD_PG_POOL_MAX": "3", "MEMORYD_LLM_MODEL": "m"})
    assert cfg.nats.url == "nats://h:1" and cfg.pg.pool_max == 3
    assert cfg.llm.model == "m" and not cfg.llm.configured  # a model without a base URL is not a route
    assert cfg.metrics.port == 0 and cfg.log.level == "info"


@pytest.mark.parametrize(
    ("env", "setting"),
    [
        ({"MEMORYD_METRICS_PORT": "99999"}, "MEMORYD_METRICS_PORT"),
        ({"MEMORYD_METRICS_PORT": "abc"}, "MEMORYD_METRICS_PORT"),
        ({"MEMORYD_LOG_LEVEL": "loud"}, "MEMORYD_LOG_LEVEL"),
        ({"MEMORYD_PG_POOL_MAX": "0"}, "MEMORYD_PG_POOL_MAX"),
        ({"MEMORYD_NATS_MAX_DELIVER": "-1"}, "MEMORYD_NATS_MAX_DELIVER"),
    ],
)
def test_bad_config_names_the_setting(env: dict[str, str], setting: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_service_config(env)
    assert err.value.setting == setting
    assert str(err.value).startswith(setting)


def test_tags_follow_the_convention() -> None:
    assert snake_name("ChatEvent") == "chat_event" and snake_name("RpcError") == "rpc_error"
    for tp in wire_types():
        assert tp.__struct_config__.tag == wire_tag(tp.__name__)
        assert tp.__struct_config__.tag_field == "type"
        assert tp.__struct_config__.frozen and tp.__struct_config__.omit_defaults


def _event(**kw: object) -> ChatEvent:
    base: dict = {
        "event_id": "e1",
        "owner": "alice",
        "occurred_at": datetime(2025, 1, 1, tzinfo=UTC),
        "messages": [ChatMessage(role="user", content="I prefer TypeScript.")],
    }
    return ChatEvent(**(base | kw))


def test_roundtrip_and_defaults_omitted() -> None:
    ev = _event()
    raw = encode(ev)
    assert json.loads(raw)["type"] == "mem.v1.chat_event"
    assert b"no_memory" not in raw and b"metadata" not in raw
    assert decode(raw, ChatEvent) == ev


def test_unknown_fields_are_tolerated_for_evolution() -> None:
    raw = json.loads(encode(_event()))
    raw["added_in_a_later_version"] = {"x": 1}
    assert decode(json.dumps(raw).encode(), ChatEvent) == _event()


@pytest.mark.parametrize(
    ("mutate", "path"),
    [
        (lambda d: d.pop("owner"), "owner"),
        (lambda d: d.update(owner=""), "$.owner"),
        (lambda d: d.update(owner="a b"), "$.owner"),
        (lambda d: d.update(owner="mem.>"), "$.owner"),
        (lambda d: d.update(messages=[]), "$.messages"),
        (lambda d: d["messages"][0].update(content="   \n\t"), "$.messages[0].content"),
        (lambda d: d["messages"][0].update(role="robot"), "$.messages[0].role"),
        (lambda d: d.update(occurred_at="yesterday"), "$.occurred_at"),
        (lambda d: d.update(no_memory="yes"), "$.no_memory"),
    ],
)
def test_invalid_events_name_the_path(mutate, path: str) -> None:  # type: ignore[no-untyped-def]
    raw = json.loads(encode(_event()))
    mutate(raw)
    with pytest.raises(ValidationFailed, match=path.replace("$", r"\$").replace("[", r"\[").replace("]", r"\]")):
        decode(json.dumps(raw).encode(), ChatEvent)


def test_lone_surrogate_is_rejected_cleanly() -> None:
    raw = encode(_event()).replace(b"I prefer TypeScript.", b"bad \\ud800 text")
    with pytest.raises(ValidationFailed):
        decode(raw, ChatEvent)


def test_oversize_payload_is_too_large() -> None:
    with pytest.raises(TooLarge):
        decode(b" " * (5 * 1024 * 1024), ChatEvent)


def test_rpc_catalogue_is_consistent() -> None:
    for name, op in RPC_OPS.items():
        assert op.name == name
        assert op.request.__name__.endswith("Request") and op.result.__name__.endswith("Result")
        assert op.request.__name__.removesuffix("Request") == op.result.__name__.removesuffix("Result")
        assert op.service in BACKEND_SERVICES
    needed = {
        "retrieve",
        "inject",
        "embed",
        "memory.create",
        "memory.get",
        "memory.update",
        "memory.delete",
        "memory.list",
        "memory.clear",
        "memory.export",
        "memory.import",
        "summarize",
        "reindex",
        "engine.status",
        "sleep.run",
        "sleep.status",
    }
    assert needed <= set(RPC_OPS)


def test_exported_json_schemas_are_up_to_date(tmp_path: Path) -> None:
    """deploy/schemas/ is generated (`memoryd schemas`); regenerate it when a message changes."""
    written = export_json_schemas(tmp_path)
    committed = ROOT / "deploy" / "schemas"
    assert sorted(p.name for p in written) == sorted(p.name for p in committed.glob("*.json"))
    for path in written:
        assert path.read_text() == (committed / path.name).read_text(), f"{path.name} is stale: run memoryd schemas"
    schema = json.loads((committed / "mem.v1.chat_event.json").read_text())
    assert "ChatEvent" in json.dumps(schema)


def test_msgspec_structs_are_frozen() -> None:
    ev = _event()
    with pytest.raises(AttributeError):
        ev.owner = "mallory"  # type: ignore[misc]
    assert msgspec.structs.replace(ev, owner="bob").owner == "bob"


def test_a_validation_error_carries_the_field_path_as_data_across_an_rpc() -> None:
    import pytest as _pytest

    from memoryd.codec import decode, decode_reply, encode
    from memoryd.errors import ValidationFailed
    from memoryd.rpc import raise_for
    from memoryd.schemas.events import ChatEvent
    from memoryd.schemas.ops import RpcError
    from shared.bus.rpc import error_reply

    body = b'{"event_id":"e1","owner":"alice","messages":[{"role":"user","content":7}],'
    body += b'"occurred_at":"2026-01-01T00:00:00Z"}'
    with _pytest.raises(ValidationFailed) as caught:
        decode(body, ChatEvent)
    assert caught.value.field == "$.messages[0].content"
    reply = decode_reply(encode(error_reply(caught.value, "memory.create")), RpcError)
    assert isinstance(reply, RpcError) and reply.field == "$.messages[0].content"
    with _pytest.raises(ValidationFailed) as again:
        raise_for(reply)
    assert again.value.field == "$.messages[0].content" and again.value.description == caught.value.description
