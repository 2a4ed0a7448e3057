"""The HTTP clients' pure parts: requests built, answers read into typed errors, retry decisions,
and one error mapping shared with the NATS RPC client."""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec
import pytest

from memoryd.errors import (
    ConfigError,
    Conflict,
    NotFound,
    QuotaExceeded,
    RateLimited,
    RemoteError,
    SecretUnavailable,
    Unauthorized,
    ValidationFailed,
)
from memoryd.http import calls
from memoryd.rpc import raise_for
from memoryd.schemas import RpcError
from memoryd.schemas.memory import MemoryGetResult, MemoryListResult, MemoryRecord

PROBLEM = "application/problem+json"
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _problem(status: int, err_code: str, detail: str, **extra: object) -> bytes:
    return msgspec.json.encode({"status": status, "err_code": err_code, "detail": detail, **extra})


def test_problems_become_the_typed_errors() -> None:
    bad = calls.error_of(
        400, PROBLEM, _problem(400, "validation", "Expected `str` - at `$.content`", field="$.content"), None
    )
    assert isinstance(bad, ValidationFailed) and bad.field == "$.content"
    assert isinstance(calls.error_of(401, PROBLEM, _problem(401, "unauthorized", "no key"), None), Unauthorized)
    assert isinstance(calls.error_of(404, PROBLEM, _problem(404, "not_found", "memory x not found"), None), NotFound)
    assert isinstance(calls.error_of(409, PROBLEM, _problem(409, "conflict", "active"), None), Conflict)
    limited = calls.error_of(429, PROBLEM, _problem(429, "rate_limited", "over 1 searches/s"), "3")
    assert isinstance(limited, RateLimited) and limited.retry_after_s == 3.0
    assert isinstance(calls.error_of(429, PROBLEM, _problem(429, "quota_exceeded", "full"), None), QuotaExceeded)
    assert isinstance(
        calls.error_of(503, PROBLEM, _problem(503, "secret_unavailable", "no key"), None), SecretUnavailable
    )
    opaque = calls.error_of(500, PROBLEM, _problem(500, "internal", "internal error", error_id="abc123"), None)
    assert isinstance(opaque, RemoteError) and opaque.error_id == "abc123"
    html = calls.error_of(502, "text/html", b"<h1>Bad Gateway</h1>", None)
    assert isinstance(html, RemoteError) and "Bad Gateway" in html.description


def test_the_rpc_client_maps_errors_the_same_way() -> None:
    for code, err_code, cls in ((404, "not_found", NotFound), (429, "rate_limited", RateLimited)):
        with pytest.raises(cls):
            raise_for(RpcError(code=code, err_code=err_code, description="x", retry_after_s=2.0))
        assert type(calls.error_of(code, PROBLEM, _problem(code, err_code, "x"), "2")) is cls


def test_retry_after_in_seconds_or_as_a_date() -> None:
    assert calls.parse_retry_after("2") == 2.0
    assert calls.parse_retry_after("Thu, 01 Jan 2026 00:00:05 GMT", NOW) == 5.0
    assert calls.parse_retry_after("soon") is None and calls.parse_retry_after(None) is None


def test_retry_policy_is_bounded() -> None:
    policy = calls.RetryPolicy(max_retries=2, max_wait_s=10.0, backoff_s=0.5)
    assert policy.delay(429, "3", 0) == 3.0
    assert policy.delay(503, None, 1) == 1.0  # no Retry-After: doubling backoff
    assert policy.delay(429, "60", 0) is None  # asks for more than max_wait_s: raise at once
    assert policy.delay(429, "1", 2) is None  # retries spent
    assert policy.delay(404, None, 0) is None and policy.delay(500, "1", 0) is None


def test_requests_carry_the_owner_and_only_what_is_set() -> None:
    search = calls.search("tea", user_id="alice", run_id=None, limit=5, threshold=0.4, filters=None)
    assert (search.method, search.path) == ("POST", "/v1/search")
    assert search.body == {"query": "tea", "limit": 5, "threshold": 0.4, "owner": "alice"}
    listing = calls.get_all(user_id=None, run_id="s1", memory_type=None, state=None, limit=10, offset=0)
    assert listing.query == {"session_id": "s1", "limit": 10, "offset": 0}
    event = calls.publish("I like tea.", user_id="alice", run_id=None, metadata={"k": 1})
    assert event.body is not None and event.body["messages"] == [{"role": "user", "content": "I like tea."}]
    assert len(event.body["event_id"]) == 32 and event.body["metadata"] == {"k": 1}
    with pytest.raises(ValidationFailed) as bad:
        calls.get("../stats", user_id=None)
    assert bad.value.field == "$.id"
    with pytest.raises(ValidationFailed) as bad:
        calls.messages_of([{"role": "user", "content": "hi"}, {"role": "robot", "content": "x"}])
    assert bad.value.field == "$.messages[1]"


def test_answers_decode_into_the_result_struct() -> None:
    record = MemoryRecord(
        id="00000000-0000-0000-0000-000000000001",
        owner="alice",
        memory_type="factual",
        content="tea",
        source="api",
        state="active",
        created_at=NOW,
        updated_at=NOW,
        content_hash="h",
    )
    body = msgspec.json.encode(MemoryGetResult(memory=record))
    got = calls.result_of(calls.get(record.id, user_id=None), 200, "application/json", body, None)
    assert got.memory == record


def _listing(processed: bool | None, *signatures: str | None) -> MemoryListResult:
    memories = [
        MemoryRecord(
            id=f"00000000-0000-0000-0000-00000000000{i}",
            owner="a",
            memory_type="episodic",
            content="x",
            source="chat_turn",
            state="active",
            created_at=NOW,
            updated_at=NOW,
            content_hash="h",
            embedding_signature=sig,
        )
        for i, sig in enumerate(signatures)
    ]
    return MemoryListResult(
        memories=memories, total=len(memories), tokens_used=0, hit_rate=0.0, event_processed=processed
    )


def test_an_event_is_settled_when_processed_and_embedded() -> None:
    assert calls.event_settled(_listing(True, "local:m:384", "local:m:384"))
    assert not calls.event_settled(_listing(True, "local:m:384", None))  # a vector still missing
    assert not calls.event_settled(_listing(False))  # not ingested yet
    assert calls.event_settled(_listing(True))  # processed, nothing new to store (a repeat)
    assert "embed" in calls.not_settled("e1", _listing(True, None), 5.0)
    assert "ingest" in calls.not_settled("e1", _listing(None), 5.0)


def test_the_target_needs_a_key() -> None:
    assert calls.target(None, "mk_1", {}) == (calls.DEFAULT_URL, "mk_1")
    assert calls.target(None, None, {"MEMORYD_URL": "http://gw:8420/", "MEMORYD_KEY": "k"}) == (
        "http://gw:8420",
        "k",
    )
    with pytest.raises(ConfigError) as missing:
        calls.target("http://gw", None, {})
    assert missing.value.setting == "MEMORYD_KEY"
    with pytest.raises(ConfigError):
        calls.target("gw:8420", "k", {})
