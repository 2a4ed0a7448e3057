"""No credential reaches a log line: URL passwords, bearer tokens and secret-named fields."""

from __future__ import annotations

from memoryd.redact import REDACTED, redact_text
from shared.observability.logging import redact


def test_url_passwords_and_bearer_tokens_are_redacted() -> None:
    line = "cannot connect to nats://ingest:s3cr3t-Pw@127.0.0.1:4222: refused; Authorization: Bearer sk-abc.def"
    out = redact_text(line)
    assert "s3cr3t-Pw" not in out and "sk-abc.def" not in out
    assert "nats://ingest:***@127.0.0.1:4222" in out and "Bearer ***" in out
    assert (
        redact_text("postgresql://postgres:pw@/postgres?host=/tmp") == "postgresql://postgres:***@/postgres?host=/tmp"
    )
    assert redact_text("nats://127.0.0.1:4222 and http://h:80/x") == "nats://127.0.0.1:4222 and http://h:80/x"


def test_secret_named_fields_are_redacted_anywhere_in_an_event() -> None:
    event = {
        "event": "settings.put",
        "password": "pw1",
        "values": {"embeddingApiKey": "k1", "qdrant_api_key": "k2", "nested": [{"token": "t"}], "maxTokens": 2000},
        "prompt_tokens": 30,
        "error": "GET https://user:pw2@api.example/v1 failed",
    }
    out = redact(None, "info", dict(event))
    text = repr(out)
    assert all(secret not in text for secret in ("pw1", "k1", "k2", "'t'", "pw2"))
    assert out["password"] == REDACTED and out["prompt_tokens"] == 30
    assert out["values"]["maxTokens"] == 2000 and out["values"]["nested"] == [{"token": REDACTED}]
