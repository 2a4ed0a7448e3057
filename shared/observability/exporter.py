"""Export a service's spans over OTLP/HTTP when an endpoint is configured (the OpenTelemetry SDK).

Without ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``..._TRACES_ENDPOINT``) nothing is installed and no
exporter thread runs; the spans of ``memoryd.tracing`` stay no-ops that still propagate context.
"""

from __future__ import annotations

from collections.abc import Callable

from opentelemetry import trace

from shared.settings.env import TracingConfig


def setup(service: str, cfg: TracingConfig, version: str = "") -> Callable[[], None] | None:
    """Install the SDK exporting this process's spans over OTLP/HTTP, when ``cfg`` has an endpoint;
    return the function that flushes and stops it (None: nothing installed, nothing to stop)."""
    url = cfg.traces_url
    if url is None:
        return None
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import SERVICE_NAME, SERVICE_VERSION, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    # OTEL_RESOURCE_ATTRIBUTES is honoured; the service name is always the process's own
    resource = Resource.create({SERVICE_NAME: f"memoryd-{service}", SERVICE_VERSION: version})
    provider = TracerProvider(resource=resource)  # sampler from OTEL_TRACES_SAMPLER (default: parent, else all)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=url)))
    trace.set_tracer_provider(provider)
    return provider.shutdown
