"""W3C trace context helpers: what goes into headers, what a span continues, what a log line carries.

With no SDK installed (the default: nothing exported) a span continues an incoming
``traceparent`` unchanged; with one, a span is a child of it. The SDK cases use a provider of
their own (``tracing._tracer`` patched), never the process-wide one.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from memoryd import tracing
from services.gateway.handlers.trace import TraceContext
from shared.observability import exporter
from shared.settings.env import TracingConfig, load

ROOT = Path(__file__).resolve().parents[3]
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_SPAN}-01"


@pytest.fixture
def exported(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    """An SDK recording every span into memory, for this test only."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(tracing, "_tracer", lambda: provider.get_tracer(tracing.SCOPE))
    yield exporter
    provider.shutdown()


def test_outside_a_span_nothing_is_injected_and_nothing_is_logged() -> None:
    assert tracing.inject({"Nats-Msg-Id": "x"}) == {"Nats-Msg-Id": "x"}
    assert tracing.current_ids() is None
    assert tracing.add_trace_ids(None, "info", {"event": "e"}) == {"event": "e"}


def test_without_the_sdk_a_span_carries_the_incoming_context_on() -> None:
    with tracing.span("ingest mem.v1.events.chat", tracing.SpanKind.CONSUMER, headers={"traceparent": TRACEPARENT}):
        assert tracing.inject() == {"traceparent": TRACEPARENT}
        assert tracing.current_ids() == (TRACE_ID, PARENT_SPAN)
        line = tracing.add_trace_ids(None, "info", {"event": "ingest.stored"})
        assert line == {"event": "ingest.stored", "trace_id": TRACE_ID, "span_id": PARENT_SPAN}
    assert tracing.current_ids() is None


def test_tracestate_travels_with_the_traceparent() -> None:
    headers = {"traceparent": TRACEPARENT, "tracestate": "vendor=abc"}
    with tracing.span("x", headers=headers):
        assert tracing.inject() == headers


@pytest.mark.parametrize(
    "bad",
    ["", "garbage", f"00-{'0' * 32}-{PARENT_SPAN}-01", f"00-{TRACE_ID}-{'0' * 16}-01", f"00-{TRACE_ID[:-1]}-x-01"],
)
def test_an_invalid_traceparent_is_ignored(bad: str, exported: InMemorySpanExporter) -> None:
    assert tracing.extract({"traceparent": bad}) is None
    with tracing.span("root", headers={"traceparent": bad}):
        ids = tracing.current_ids()
    assert ids is not None and ids[0] != TRACE_ID
    (span,) = exported.get_finished_spans()
    assert span.parent is None


def test_with_the_sdk_a_span_is_a_child_and_injects_its_own_id(exported: InMemorySpanExporter) -> None:
    with tracing.span("retrieve", tracing.SpanKind.SERVER, headers={"traceparent": TRACEPARENT}) as server:
        with tracing.span("rpc embed", tracing.SpanKind.CLIENT, attributes={"rpc.method": "embed"}):
            headers = tracing.inject({"Memoryd-Request-Id": "r1"})
            ids = tracing.current_ids()
        server_id = format(server.get_span_context().span_id, "016x")
    client, parent = exported.get_finished_spans()
    assert ids is not None and ids[0] == TRACE_ID and ids[1] not in (PARENT_SPAN, server_id)
    assert headers == {"Memoryd-Request-Id": "r1", "traceparent": f"00-{TRACE_ID}-{ids[1]}-01"}
    assert parent.name == "retrieve" and parent.kind == tracing.SpanKind.SERVER
    assert parent.parent is not None and format(parent.parent.span_id, "016x") == PARENT_SPAN
    assert parent.parent.is_remote
    assert client.parent is not None and client.parent.span_id == server.get_span_context().span_id
    assert client.attributes == {"rpc.method": "embed"}


def test_an_exception_or_an_error_reply_marks_the_span(exported: InMemorySpanExporter) -> None:
    with pytest.raises(ValueError), tracing.span("extract mem.v1.jobs.extract"):
        raise ValueError("boom")
    with tracing.span("retrieve") as span:
        tracing.mark_error("internal error", span)
    failed, replied = exported.get_finished_spans()
    assert not failed.status.is_ok and failed.events[0].name == "exception"
    assert not replied.status.is_ok and replied.status.description == "internal error"


def test_export_is_configured_only_by_an_endpoint() -> None:
    def cfg(**env: str) -> TracingConfig:
        return load(TracingConfig, "OTEL_", env)

    assert cfg().traces_url is None
    assert exporter.setup("ingest", cfg()) is None  # no SDK, no exporter thread
    assert cfg(OTEL_EXPORTER_OTLP_ENDPOINT="http://c:4318/").traces_url == "http://c:4318/v1/traces"
    assert (
        cfg(OTEL_EXPORTER_OTLP_ENDPOINT="http://c:4318", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="http://t/x").traces_url
        == "http://t/x"
    )
    assert cfg(OTEL_EXPORTER_OTLP_ENDPOINT="http://c:4318", OTEL_SDK_DISABLED="true").traces_url is None
    assert cfg(OTEL_EXPORTER_OTLP_ENDPOINT="http://c:4318", OTEL_TRACES_EXPORTER="none").traces_url is None


def test_the_gateway_continues_an_incoming_traceparent_and_names_spans_by_route(
    exported: InMemorySpanExporter,
) -> None:
    async def endpoint(request: Request) -> JSONResponse:
        return JSONResponse(tracing.inject())

    app = Starlette(routes=[Route("/v1/memories/{id}", endpoint)], middleware=[(TraceContext, (), {})])  # type: ignore[list-item]
    with TestClient(app) as client:
        onward = client.get("/v1/memories/m-123", headers={"traceparent": TRACEPARENT}).json()
        client.get("/v1/memories/m-456")
    continued, fresh = exported.get_finished_spans()
    assert continued.name == "GET /v1/memories/{id}" and continued.kind == tracing.SpanKind.SERVER
    assert continued.attributes is not None and continued.attributes["http.response.status_code"] == 200
    assert continued.parent is not None and format(continued.parent.span_id, "016x") == PARENT_SPAN
    span_id = format(continued.get_span_context().span_id, "016x")
    assert onward == {"traceparent": f"00-{TRACE_ID}-{span_id}-01"}
    assert fresh.parent is None and format(fresh.get_span_context().trace_id, "032x") != TRACE_ID


def test_service_log_lines_carry_the_trace_id() -> None:
    code = textwrap.dedent(
        f"""
        from shared.observability.logging import configure, get_logger
        from memoryd import tracing
        from shared.settings.env import LogConfig
        configure("ingest", LogConfig())
        log = get_logger("t")
        log.info("outside")
        with tracing.span("ingest", headers={{"traceparent": "{TRACEPARENT}"}}):
            log.info("inside", owner="alice")
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    outside, inside = (json.loads(line) for line in out.stderr.splitlines())
    assert "trace_id" not in outside and outside["service"] == "ingest"
    assert inside["event"] == "inside" and inside["trace_id"] == TRACE_ID and inside["span_id"] == PARENT_SPAN
