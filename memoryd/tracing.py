"""W3C trace context across services: spans, ``traceparent`` in NATS headers, export, log ids.

Every hop of a chat event or a search carries ``traceparent`` (and ``tracestate``) in its NATS
headers, JetStream jobs included, so every process continues the same trace. ``inject(headers)``
adds the current span's context to a message about to be sent; ``span(name, kind, headers=...)``
starts a span whose parent is the context in ``headers`` (else the current span). ``shared.bus``
does both for every RPC and every consumed job; the publish sites call ``inject``.
``add_trace_ids`` is a structlog processor: a line written inside a span carries ``trace_id`` and
``span_id`` (hex). Only the OpenTelemetry API is imported here (a base dependency of the client);
a service installs the SDK and its exporter (``shared.observability.exporter``) only when an
endpoint is configured, and without it the no-op spans still carry an incoming context on.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, MutableMapping
from functools import cache
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

TRACEPARENT = "traceparent"
TRACESTATE = "tracestate"
#: the instrumentation scope of every memoryd span
SCOPE = "memoryd"

_PROPAGATOR = TraceContextTextMapPropagator()

__all__ = [
    "TRACEPARENT",
    "TRACESTATE",
    "Span",
    "SpanKind",
    "add_trace_ids",
    "current_ids",
    "extract",
    "inject",
    "mark_error",
    "span",
]


@cache
def _tracer() -> trace.Tracer:
    # a proxy until a provider is installed, then the provider's tracer: safe to cache
    return trace.get_tracer(SCOPE)


def inject(headers: dict[str, str] | None = None) -> dict[str, str]:
    """``headers`` (a new dict when None) plus ``traceparent``/``tracestate`` of the current span,
    when there is one; returned for use inline (``publish(..., headers=inject({...}))``)."""
    out = {} if headers is None else headers
    _PROPAGATOR.inject(out)
    return out


def extract(headers: Mapping[str, str] | None) -> Context | None:
    """The remote parent in ``headers`` (``None`` when they carry no valid ``traceparent``)."""
    if not headers or TRACEPARENT not in headers:
        return None
    ctx = _PROPAGATOR.extract(headers)
    return ctx if trace.get_current_span(ctx).get_span_context().is_valid else None


@contextlib.contextmanager
def span(
    name: str,
    kind: SpanKind = SpanKind.INTERNAL,
    *,
    headers: Mapping[str, str] | None = None,
    attributes: Mapping[str, str | int | float | bool] | None = None,
) -> Iterator[Span]:
    """A current span named ``name``, child of the context in ``headers`` (a message received)
    or else of the current span; an exception escaping it marks it as an error."""
    parent = extract(headers)
    with _tracer().start_as_current_span(
        name, context=parent, kind=kind, attributes=dict(attributes) if attributes else None
    ) as current:
        yield current


def mark_error(description: str, current: Span | None = None) -> None:
    """Mark ``current`` (by default the current span) failed without an exception escaping it
    (an error reply, a retried or dead-lettered job)."""
    (current or trace.get_current_span()).set_status(Status(StatusCode.ERROR, description[:200]))


def current_ids() -> tuple[str, str] | None:
    """``(trace_id, span_id)`` of the current span in hex, or None outside any span."""
    ctx = trace.get_current_span().get_span_context()
    if not ctx.is_valid:
        return None
    return format(ctx.trace_id, "032x"), format(ctx.span_id, "016x")


def add_trace_ids(_logger: Any, _method: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """structlog processor: ``trace_id``/``span_id`` of the current span on every line written in one."""
    ids = current_ids()
    if ids is not None:
        event.setdefault("trace_id", ids[0])
        event.setdefault("span_id", ids[1])
    return event
