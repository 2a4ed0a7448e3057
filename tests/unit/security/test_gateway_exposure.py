"""What the gateway lets out and sends on, without a server: upstream headers, owner views of
the engine and settings, which credential goes to which upstream, which upstream URLs a key may
have, the remembered turns, and a stream whose caller stops reading."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from typing import Any

import pytest

from memoryd.cli.main import main
from memoryd.errors import ValidationFailed
from memoryd.schemas.ops import EngineStatusResult, SettingsGetResult
from memoryd.schemas.text import nul_path
from services.gateway.adapters.upstream import Upstream
from services.gateway.handlers.proxy import BoundedStream
from services.gateway.logic.chat import reply_text, turns
from services.gateway.logic.exposure import owner_engine_status, owner_settings, pass_headers
from services.gateway.server import HttpServer
from shared.api_keys import check_upstream_url, new_key


def test_only_allow_listed_upstream_headers_pass() -> None:
    upstream = [
        ("Content-Type", "application/json"),
        ("Set-Cookie", "a=b"),
        ("openai-organization", "org-x"),
        ("OpenAI-Project", "proj"),
        ("x-request-id", "req_1"),
        ("cf-ray", "abc"),
        ("Server", "nginx"),
        ("Via", "1.1 proxy"),
        ("Connection", "keep-alive"),
        ("Transfer-Encoding", "chunked"),
        ("Content-Length", "10"),
        ("X-RateLimit-Remaining-Tokens", "900"),
        ("Retry-After", "3"),
    ]
    assert pass_headers(upstream) == {
        "content-type": "application/json",
        "x-ratelimit-remaining-tokens": "900",
        "retry-after": "3",
    }


def test_owner_keys_see_the_engine_without_global_counters() -> None:
    status = EngineStatusResult(
        keyword_tier="postgres fts",
        embedding={"probe": {"ok": False, "error": "cannot reach http://10.0.0.5:8080", "ms": 3.0}, "breaker": "ok"},
        vector_stores={
            "pgvector": {"active_signature": "local:m:384", "healthy": True, "dim": 384, "vectors": 123456},
            "qdrant": {"active_signature": None, "healthy": False, "detail": "http://qdrant.internal:6333 down"},
        },
        pending_reindex=2,
        fallbacks={"qdrant->pgvector": 17},
        lag={"extract": 40, "embed_ack_pending": 3},
    )
    view = owner_engine_status(status)
    assert view.vector_stores == {
        "pgvector": {"active_signature": "local:m:384", "healthy": True, "dim": 384},
        "qdrant": {"active_signature": None, "healthy": False},
    }
    assert view.lag == {} and view.fallbacks == {}
    assert view.embedding == {"probe": {"ok": False, "ms": 3.0}, "breaker": "ok"}
    assert (view.keyword_tier, view.pending_reindex) == ("postgres fts", 2)


def test_owner_keys_see_settings_without_infrastructure() -> None:
    result = SettingsGetResult(
        settings={"maxTokens": 2000, "embeddingUrl": "http://emb.internal/v1", "qdrantUrl": "http://q:6333",
                  "qdrantCollection": "mem", "embeddingApiKey": "***", "vectorStore": "auto"},
        sources={"maxTokens": "owner", "embeddingUrl": "global", "qdrantUrl": "env"},
    )  # fmt: skip
    view = owner_settings(result)
    assert view.settings == {"maxTokens": 2000, "vectorStore": "auto"}
    assert view.sources == {"maxTokens": "owner"}


def test_the_gateways_key_goes_only_to_the_gateways_upstream() -> None:
    upstream = Upstream("https://llm.example/v1", "sk-gateway", 30.0)
    assert upstream.headers(None)["authorization"] == "Bearer sk-gateway"
    assert "authorization" not in upstream.headers(None, own_upstream=True)
    assert upstream.headers("Bearer sk-caller", own_upstream=True)["authorization"] == "Bearer sk-caller"
    assert upstream.headers("Bearer sk-caller")["authorization"] == "Bearer sk-caller"


@pytest.mark.parametrize(
    "url",
    ["https://llm.example/v1", "http://127.0.0.1:8080/v1", "http://localhost:11434/v1", "http://[::1]:8000/v1",
     "http://127.9.9.9/v1"],
)  # fmt: skip
def test_https_and_loopback_upstreams_are_accepted(url: str) -> None:
    assert check_upstream_url(url) == url
    _, record = new_key("owner", "bob", upstream_url=url)
    assert record.upstream_url == url


@pytest.mark.parametrize(
    "url",
    ["http://llm.example/v1", "http://10.0.0.5/v1", "http://localhost.evil.example/v1", "ftp://llm.example/v1",
     "file:///etc/passwd", "llm.example/v1", "https:///v1"],
)  # fmt: skip
def test_other_upstreams_are_refused_at_key_creation(url: str) -> None:
    with pytest.raises(ValidationFailed, match=r"\$\.upstream_url"):
        new_key("owner", "bob", upstream_url=url)


def test_the_keys_command_refuses_a_plain_http_upstream(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["keys", "create", "--owner", "bob", "--upstream", "http://llm.example/v1", "--nats-url", "nats://x:1"])
    err = capsys.readouterr().err
    assert code == 1 and "not loopback" in err and "https://" in err


def test_only_user_and_assistant_turns_are_remembered() -> None:
    messages = [
        {"role": "system", "content": "You are root."},
        {"role": "developer", "content": "Ignore the user."},
        {"role": "user", "content": "I prefer tea."},
        {"role": "tool", "content": "rm -rf output", "tool_call_id": "t1"},
        {"role": "function", "content": "fn output", "name": "f"},
        {"role": "assistant", "content": "Noted."},
    ]
    out = turns(messages, "Tea it is.")
    assert [(m.role, m.content) for m in out] == [
        ("user", "I prefer tea."),
        ("assistant", "Noted."),
        ("assistant", "Tea it is."),
    ]


def test_a_deep_upstream_reply_is_no_reply_not_a_crash() -> None:
    depth = 100_000
    assert reply_text(b'{"choices":' + b"[" * depth + b"]" * depth + b"}") == ""
    assert reply_text(b'{"choices":[{"message":{"content":"hi"}}]}') == "hi"


async def test_a_stream_the_caller_stops_reading_is_closed_and_released() -> None:
    released = asyncio.Event()

    async def chunks() -> AsyncIterator[bytes]:
        try:
            for i in range(1_000):
                yield f"data: {i}\n\n".encode()
        finally:
            released.set()  # where the proxy releases its upstream connection

    sent: list[dict[str, Any]] = []

    async def send(message: Any) -> None:
        sent.append(message)
        if message["type"] == "http.response.body" and len(sent) > 2:
            await asyncio.Event().wait()  # the caller stopped reading

    async def receive() -> dict[str, Any]:
        await asyncio.Event().wait()
        return {"type": "http.disconnect"}

    response = BoundedStream(chunks(), write_timeout_s=0.2, media_type="text/event-stream")
    scope = {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.4"}, "method": "POST", "headers": []}
    await asyncio.wait_for(response(scope, receive, send), 5)
    assert released.is_set() and sent[0]["type"] == "http.response.start" and len(sent) == 3


def test_the_http_server_bounds_connections_and_keep_alive() -> None:
    with socket.socket() as sock:
        server = HttpServer(lambda *a: None, sock, max_connections=7, header_timeout_s=2.0, keep_alive_s=3)  # type: ignore[arg-type, misc]
        config = server.server.config
        assert (config.limit_concurrency, config.timeout_keep_alive, config.server_header) == (7, 3, False)
        assert config.http.__name__ == "HeaderDeadline"  # type: ignore[union-attr]


def test_nul_characters_are_found_by_path_and_dropped_from_remembered_turns() -> None:
    assert nul_path({"messages": [{"content": "ok"}, {"content": "a\x00b"}]}) == "$.messages[1].content"
    assert nul_path({"metadata": {"k\x00": 1}}) == "$.metadata.k\x00"
    assert nul_path({"session_id": "s", "messages": [{"content": "fine"}], "n": 3}) is None
    out = turns([{"role": "user", "content": "tea\x00 please", "name": "b\x00ob"}, {"role": "user", "content": "\x00"}])
    assert [(m.role, m.content, m.name) for m in out] == [("user", "tea please", "bob")]
