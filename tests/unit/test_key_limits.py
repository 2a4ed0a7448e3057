"""Per-key limits, the pure part: which limits hold, fixed windows, allow/deny, Retry-After, and the
usage an upstream reports (whole answers and streams, with the usage chunk taken out when the
caller did not ask for it)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import msgspec
import pytest

from memoryd.errors import Forbidden, RateLimited, ValidationFailed
from services.gateway.config import GatewayConfig
from services.gateway.logic.limits import (
    Limits,
    TokenBudgetSpent,
    check_budget,
    check_model,
    counter_key,
    effective,
    fits,
    rate_limited,
    retry_after,
    take_slot,
    window_of,
)
from services.gateway.logic.usage import SseUsage, ask_for_usage, estimate, usage_tokens
from shared.api_keys import ApiKeyRecord, KeyLimits, key_limits, new_key

NOON = datetime(2026, 12, 6, 12, 0, 0, tzinfo=UTC).timestamp()


def test_a_key_limit_overrides_the_default_and_zero_means_unlimited() -> None:
    defaults = GatewayConfig(
        key_max_tokens_per_day=1000,
        key_requests_per_minute=60,
        key_max_streams=2,
        key_models="a, b",
        key_events_per_second=5,
    )
    own = KeyLimits(max_tokens_per_day=0, requests_per_minute=10, models=["c"])
    assert effective(own, defaults) == Limits(
        tokens_per_day=0, requests_per_minute=10, streams=2, models=frozenset({"c"}), events_per_second=5
    )
    assert effective(KeyLimits(), defaults).models == frozenset({"a", "b"})
    assert effective(KeyLimits(), GatewayConfig()) == Limits()


def test_fixed_windows_and_retry_after() -> None:
    assert window_of("minute", NOON + 15.5) == (int(NOON // 60), 44.5)
    assert window_of("day", NOON) == (int(NOON // 86_400), 43_200.0)
    assert window_of("second", 10.25) == (10, 0.75)
    assert counter_key("rpm", "abc", "minute", NOON) == f"rpm.abc.{int(NOON // 60)}"
    assert counter_key("rpm", "abc", "minute", NOON + 59.9) == counter_key("rpm", "abc", "minute", NOON)
    assert counter_key("rpm", "abc", "minute", NOON + 60) != counter_key("rpm", "abc", "minute", NOON)
    assert retry_after(0.01) == 1 and retry_after(44.5) == 45 and retry_after(0) == 1


def test_fits_counts_up_to_the_limit() -> None:
    assert fits(0, 1, 0) and fits(10**9, 1, 0)  # 0 = unlimited
    assert fits(2, 1, 3) and not fits(3, 1, 3)


def test_the_model_allowlist() -> None:
    check_model("anything", Limits())
    check_model("gpt-a", Limits(models=frozenset({"gpt-a"})))
    with pytest.raises(Forbidden, match=r"may not use model 'gpt-b'.*allowed: gpt-a"):
        check_model("gpt-b", Limits(models=frozenset({"gpt-a"})))
    for odd in (None, {"a": 1}, ["gpt-a"], 3):  # a hostile `model` is a 403, not a crash
        with pytest.raises(Forbidden):
            check_model(odd, Limits(models=frozenset({"gpt-a"})))


def test_the_day_budget_refuses_once_spent_until_the_next_utc_day() -> None:
    check_budget(999, Limits(tokens_per_day=1000), NOON)
    check_budget(10**9, Limits(), NOON)
    with pytest.raises(TokenBudgetSpent) as err:
        check_budget(1000, Limits(tokens_per_day=1000), NOON)
    assert err.value.code == 429 and err.value.err_code == "budget_exceeded"
    assert err.value.retry_after_s == 43_200


def test_a_rate_is_retried_when_its_window_ends() -> None:
    err = rate_limited("requests", 3, "minute", NOON + 50.2)
    assert isinstance(err, RateLimited) and err.err_code == "rate_limited" and err.retry_after_s == 10
    assert "3 requests per minute" in err.description


def test_stream_slots_expire_and_are_capped() -> None:
    slots = take_slot({}, "a", 2, 100.0, 30.0)
    assert slots == {"a": 130.0}
    slots = take_slot(slots, "b", 2, 101.0, 30.0)
    assert slots == {"a": 130.0, "b": 131.0}
    assert take_slot(slots, "c", 2, 102.0, 30.0) is None  # two open
    assert take_slot(slots, "c", 2, 130.5, 30.0) == {"b": 131.0, "c": 160.5}  # a lapsed (its gateway died)
    assert take_slot(slots, "c", 0, 102.0, 30.0) == {"a": 130.0, "b": 131.0, "c": 132.0}  # 0 = unlimited


def test_usage_of_a_whole_answer() -> None:
    assert usage_tokens({"usage": {"prompt_tokens": 7, "completion_tokens": 5, "total_tokens": 99}}) == 12
    assert usage_tokens({"usage": {"total_tokens": 9}}) == 9
    responses_done = {"type": "response.completed", "response": {"usage": {"input_tokens": 5, "output_tokens": 6}}}
    assert usage_tokens(responses_done) == 11
    assert usage_tokens({"usage": None}) is None and usage_tokens([]) is None
    assert usage_tokens({"usage": {"prompt_tokens": -1, "completion_tokens": 2}}) is None
    assert estimate(40, 0) == 10 and estimate(0, 0) == 1


def test_a_stream_asks_for_usage_unless_the_caller_did() -> None:
    body = {"model": "m", "stream": True, "stream_options": {"x": 1}}
    sent, added = ask_for_usage(body)
    assert added and sent["stream_options"] == {"x": 1, "include_usage": True} and body["stream_options"] == {"x": 1}
    asked = {"stream": True, "stream_options": {"include_usage": True}}
    assert ask_for_usage(asked) == (asked, False)
    assert ask_for_usage({"stream": False}) == ({"stream": False}, False)


def _event(obj: object) -> bytes:
    return f"data: {json.dumps(obj)}\n\n".encode()


CHUNK = {"choices": [{"index": 0, "delta": {"content": "hi"}}], "usage": None}
USAGE = {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}}


def test_sse_usage_is_read_and_taken_out_when_the_caller_did_not_ask() -> None:
    stream = _event(CHUNK) + _event(USAGE) + b"data: [DONE]\n\n"
    strip = SseUsage(strip=True)
    pieces = [strip.feed(stream[i : i + 7]) for i in range(0, len(stream), 7)]
    out = b"".join(pieces) + strip.flush()
    assert strip.tokens == 7 and out == _event(CHUNK) + b"data: [DONE]\n\n"
    assert strip.seen == len(stream)
    keep = SseUsage(strip=False)
    pieces = [keep.feed(stream[i : i + 5]) for i in range(0, len(stream), 5)]
    assert keep.tokens == 7 and b"".join(pieces) + keep.flush() == stream  # unchanged, chunk for chunk


def test_sse_usage_with_crlf_events_and_a_last_event_without_its_blank_line() -> None:
    stream = _event(CHUNK).replace(b"\n", b"\r\n") + b"data: [DONE]"
    reader = SseUsage(strip=True)
    assert reader.feed(stream) + reader.flush() == stream and reader.tokens is None


def test_key_limits_from_the_command_line() -> None:
    limits = key_limits(max_tokens_per_day=5000, models="gpt-a, gpt-b,", events_per_second=0)
    assert limits == KeyLimits(max_tokens_per_day=5000, models=["gpt-a", "gpt-b"], events_per_second=0)
    assert limits.public() == {"max_tokens_per_day": 5000, "models": ["gpt-a", "gpt-b"], "events_per_second": 0}
    with pytest.raises(ValidationFailed) as err:
        key_limits(max_streams=-1)
    assert err.value.field == "$.max_streams"


def test_a_key_record_keeps_its_limits_and_old_records_have_none() -> None:
    _, record = new_key("owner", "alice", limits=KeyLimits(requests_per_minute=3))
    again = msgspec.json.decode(msgspec.json.encode(record), type=ApiKeyRecord)
    assert again.limits == KeyLimits(requests_per_minute=3)
    assert record.public()["limits"] == {"requests_per_minute": 3}
    old = msgspec.json.encode({k: v for k, v in msgspec.to_builtins(record).items() if k != "limits"})
    assert msgspec.json.decode(old, type=ApiKeyRecord).limits == KeyLimits()


def test_a_stream_nobody_counts_is_passed_through_unread() -> None:
    chunk = b'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4}}\n\n'
    usage = SseUsage(strip=False, read=False)
    assert usage.feed(chunk) == chunk and usage.flush() == b""
    assert (usage.tokens, usage.seen) == (None, len(chunk))  # not parsed: only the bytes are counted
    counted = SseUsage(strip=False)
    assert counted.feed(chunk) == chunk and counted.tokens == 7
