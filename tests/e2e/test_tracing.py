"""One chat event and one search followed through every service by trace id.

``memoryd up`` runs with ``OTEL_EXPORTER_OTLP_ENDPOINT`` pointing at an OTLP/HTTP collector
stand-in (``tests.support.otlp``); an application with the OpenTelemetry SDK of its own
publishes an event and searches with ``MemoryClient``. The event's trace holds the client's
publish span and then, each the child of the one before, ingest's, extract's and embed's job
spans; the search's holds the client's call, retrieve's request, retrieve's call to embed for
the query vector and embed's request, each service under its own ``service.name``. The line
extract logs for the event carries its trace id.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.otlp import ExportedSpan, OtlpCollector
from tests.support.up import RunningUp, clean_env, start_up

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
APP = "tracing-app"

APPLICATION = textwrap.dedent(
    f"""
    import asyncio, sys, uuid

    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from memoryd import MemoryClient

    provider = TracerProvider(resource=Resource.create({{"service.name": "{APP}"}}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=sys.argv[2] + "/v1/traces")))
    trace.set_tracer_provider(provider)
    app = trace.get_tracer("app")

    def hex_id(span):
        return format(span.get_span_context().trace_id, "032x")

    async def main() -> None:
        async with await MemoryClient.connect(credentials=sys.argv[1]) as memory:
            with app.start_as_current_span("chat") as span:
                await memory.publish_chat("tracer", [{{"role": "user", "content": "I prefer Zig for systems work."}}])
                print("event", hex_id(span), flush=True)
            await memory.wait_searchable("tracer", "Zig", timeout=60)
            with app.start_as_current_span("search") as span:
                # a query never asked before: its vector is not cached, so retrieve asks embed
                found = await memory.retrieve("tracer", f"which language for systems {{uuid.uuid4().hex}}?")
                print("search", hex_id(span), len(found.memories), flush=True)

    asyncio.run(main())
    provider.shutdown()
    """
)


@pytest.fixture(scope="module")
def collector() -> Iterator[OtlpCollector]:
    with OtlpCollector() as running:
        yield running


@pytest.fixture(scope="module")
def traced(collector: OtlpCollector, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningUp]:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "200"}
    up = start_up(tmp_path_factory.mktemp("traced") / "data", env=env)
    try:
        yield up
    finally:
        up.stop()


def one(spans: list[ExportedSpan], service: str, kind: str, name: str) -> ExportedSpan:
    found = [s for s in spans if s.service == service and s.kind == kind and s.name.startswith(name)]
    assert len(found) == 1, f"{service} {kind} {name}: {found} in {sorted((s.service, s.name) for s in spans)}"
    return found[0]


def has(service: str, kind: str, name: str) -> Callable[[list[ExportedSpan]], bool]:
    return lambda spans: any(s.service == service and s.kind == kind and s.name.startswith(name) for s in spans)


def fact_embedded(spans: list[ExportedSpan]) -> bool:
    """An embed job span whose parent is extract's job span has arrived."""
    extracts = {s.span_id for s in spans if s.service == "memoryd-extract" and s.kind == "consumer"}
    return any(s.service == "memoryd-embed" and s.kind == "consumer" and s.parent_span_id in extracts for s in spans)


def test_an_event_and_a_search_are_followed_through_every_service(
    traced: RunningUp, collector: OtlpCollector, tmp_path: Path
) -> None:
    script = tmp_path / "app.py"
    script.write_text(APPLICATION)
    run = subprocess.run(
        [sys.executable, str(script), str(traced.credentials), collector.endpoint],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=tmp_path,
        env=clean_env(PYTHONPATH=str(ROOT)),
    )
    assert run.returncode == 0, run.stderr[-3000:]
    printed = dict((line.split()[0], line.split()[1:]) for line in run.stdout.splitlines())
    event_trace, (search_trace, hits) = printed["event"][0], printed["search"]
    assert int(hits) >= 1

    # each process exports its own spans in batches: the ingest span may arrive after extract's
    spans = collector.wait_for(
        event_trace,
        lambda got: fact_embedded(got) and has("memoryd-ingest", "consumer", "ingest mem.v1.events.chat")(got),
        timeout=60,
    )
    chat = one(spans, APP, "internal", "chat")
    publish = one(spans, APP, "producer", "publish mem.v1.events.chat")
    ingest = one(spans, "memoryd-ingest", "consumer", "ingest mem.v1.events.chat")
    extract = one(spans, "memoryd-extract", "consumer", "extract mem.v1.jobs.extract")
    embeds = [s for s in spans if s.service == "memoryd-embed" and s.name == "embed mem.v1.jobs.embed"]
    assert chat.parent_span_id == ""  # the application's own root
    assert publish.parent_span_id == chat.span_id
    assert ingest.parent_span_id == publish.span_id  # across JetStream: the header stored with the event
    assert extract.parent_span_id == ingest.span_id
    # the fact extract found is embedded under extract's span (the turn's own vector under ingest's)
    assert extract.span_id in {e.parent_span_id for e in embeds}
    assert {e.parent_span_id for e in embeds} <= {ingest.span_id, extract.span_id}
    assert not any(s.error for s in (publish, ingest, extract, *embeds))
    assert publish.attributes["memoryd.owner"] == "tracer"

    # each process exports its own spans in batches: wait for every server span read below, in any order
    spans = collector.wait_for(
        search_trace,
        lambda got: all(
            has(service, "server", name)(got)
            for service, name in (("memoryd-retrieve", "retrieve"), ("memoryd-embed", "embed"))
        ),
        timeout=60,
    )
    search = one(spans, APP, "internal", "search")
    call = one(spans, APP, "client", "rpc retrieve")
    retrieve = one(spans, "memoryd-retrieve", "server", "retrieve")
    call_embed = one(spans, "memoryd-retrieve", "client", "rpc embed")
    serve_embed = one(spans, "memoryd-embed", "server", "embed")
    assert call.parent_span_id == search.span_id
    assert retrieve.parent_span_id == call.span_id  # across a NATS request: its traceparent header
    assert call_embed.parent_span_id == retrieve.span_id
    assert serve_embed.parent_span_id == call_embed.span_id
    assert retrieve.attributes["rpc.method"] == "retrieve" and not retrieve.error

    logs = {p.name: p.read_text() for p in (traced.data_dir / "logs").glob("*.log")}
    assert any(f'"trace_id": "{event_trace}"' in text for name, text in logs.items() if name.startswith("extract"))
