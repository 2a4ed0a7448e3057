"""An OTLP/HTTP trace collector stand-in: ``POST /v1/traces`` (protobuf), decoded and kept in memory.

What Jaeger, Tempo or an OpenTelemetry Collector receive from memoryd, on a free loopback
port, for tests that follow a trace across processes::

    with OtlpCollector() as collector:       # collector.endpoint -> OTEL_EXPORTER_OTLP_ENDPOINT
        ...
        spans = collector.wait_for(trace_id, lambda spans: ..., timeout=30)
"""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span as PbSpan

KINDS = {
    PbSpan.SPAN_KIND_INTERNAL: "internal",
    PbSpan.SPAN_KIND_SERVER: "server",
    PbSpan.SPAN_KIND_CLIENT: "client",
    PbSpan.SPAN_KIND_PRODUCER: "producer",
    PbSpan.SPAN_KIND_CONSUMER: "consumer",
}


@dataclass(frozen=True)
class ExportedSpan:
    service: str  # the resource's service.name
    name: str
    kind: str
    trace_id: str  # hex, as trace backends show it
    span_id: str
    parent_span_id: str  # "" for a root
    attributes: dict[str, Any]
    error: bool


def _value(v: AnyValue) -> Any:
    field = v.WhichOneof("value")
    return getattr(v, field) if field in ("string_value", "bool_value", "int_value", "double_value") else str(v)


def decode(body: bytes) -> list[ExportedSpan]:
    """The spans of one OTLP/HTTP protobuf export request."""
    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    out: list[ExportedSpan] = []
    for resource_spans in request.resource_spans:
        resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                out.append(
                    ExportedSpan(
                        service=str(resource.get("service.name", "")),
                        name=span.name,
                        kind=KINDS.get(span.kind, "unspecified"),
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        parent_span_id=span.parent_span_id.hex(),
                        attributes={a.key: _value(a.value) for a in span.attributes},
                        error=span.status.code == span.status.STATUS_CODE_ERROR,
                    )
                )
    return out


class OtlpCollector:
    """A threaded HTTP server that accepts OTLP/HTTP protobuf trace exports and keeps their spans."""

    def __init__(self) -> None:
        self._spans: list[ExportedSpan] = []
        self._lock = threading.Lock()
        self.requests = 0
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                if self.path != "/v1/traces" or self.headers.get("Content-Type") != "application/x-protobuf":
                    self.send_response(404 if self.path != "/v1/traces" else 415)
                    self.end_headers()
                    return
                spans = decode(body)
                with collector._lock:
                    collector._spans += spans
                    collector.requests += 1
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, name="otlp-collector", daemon=True)

    @property
    def endpoint(self) -> str:
        """The base URL for ``OTEL_EXPORTER_OTLP_ENDPOINT`` (spans are posted to ``/v1/traces``)."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def spans(self, trace_id: str | None = None) -> list[ExportedSpan]:
        with self._lock:
            return [s for s in self._spans if trace_id is None or s.trace_id == trace_id]

    def wait_for(
        self, trace_id: str, done: Callable[[list[ExportedSpan]], bool], timeout: float = 30.0
    ) -> list[ExportedSpan]:
        """The trace's spans once ``done(spans)`` holds; ``AssertionError`` with what arrived, at the timeout."""
        deadline = time.monotonic() + timeout
        while True:
            spans = self.spans(trace_id)
            if done(spans):
                return spans
            if time.monotonic() > deadline:
                got = sorted((s.service, s.name) for s in spans)
                raise AssertionError(f"trace {trace_id} incomplete after {timeout} s: {got}")
            time.sleep(0.1)

    def __enter__(self) -> OtlpCollector:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
