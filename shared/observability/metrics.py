"""Every ``memoryd_*`` Prometheus metric, defined once, and the per-service HTTP endpoint.

A metric is defined here once; the service that owns it registers it. Each service serves
its own registry (``service_registry``): the process, platform and GC collectors, the
families every service has (``SERVICE``: up, RPCs), the groups it uses (``CONSUMER`` for a
JetStream stage, ``LLM`` for a service that calls the LLM) and its own families, listed
as ``METRICS`` in ``services/<name>/app.py``. So ``job="ingest"`` carries no embed metric.
The definitions also stay in prometheus_client's default registry, which no endpoint
serves: in-process tests read values there whatever service counted them.
Port 0 picks a free port, reported back to the caller.
"""

from __future__ import annotations

import errno
from collections.abc import Iterable

from prometheus_client import (
    GC_COLLECTOR,
    PLATFORM_COLLECTOR,
    PROCESS_COLLECTOR,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    start_http_server,
)
from prometheus_client.registry import Collector

from memoryd.errors import ConfigError

_LAT = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)

UP = Gauge("memoryd_up", "1 while the service runs", ["service"])
RPC_REQUESTS = Counter("memoryd_rpc_requests_total", "RPC requests by op and code", ["service", "op", "code"])
RPC_SECONDS = Histogram("memoryd_rpc_seconds", "RPC handling time", ["service", "op"], buckets=_LAT)
JOBS = Counter("memoryd_jobs_total", "Stream messages by stage and outcome", ["stage", "outcome"])
JOB_SECONDS = Histogram("memoryd_job_seconds", "Time to handle one stream message", ["stage"], buckets=_LAT)
EVENTS = Counter("memoryd_events_total", "Chat events by outcome", ["outcome"])
TURNS = Counter("memoryd_turns_total", "Chat turns by outcome (stored, duplicate)", ["outcome"])
FACTS = Counter("memoryd_facts_total", "Extracted facts by extractor and outcome", ["extractor", "outcome"])
LLM_CALLS = Counter("memoryd_llm_calls_total", "LLM calls by operation and outcome", ["operation", "outcome"])
LLM_TOKENS = Counter("memoryd_llm_tokens_total", "LLM tokens by operation", ["operation"])
EXTRACT_LLM_SKIPPED = Counter(
    "memoryd_extract_llm_skipped_total", "Extract jobs whose LLM pass failed (rule facts still stored)", ["reason"]
)
EMBED_BATCH = Histogram(
    "memoryd_embed_batch_size", "Texts per inference batch", buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256)
)
EMBED_SECONDS = Histogram("memoryd_embed_inference_seconds", "Inference time per batch", buckets=_LAT)
EMBED_TEXTS = Counter("memoryd_embed_texts_total", "Texts embedded, by path", ["path"])
EMBED_SKIPPED = Counter(
    "memoryd_embed_skipped_total", "Embed jobs acked without embedding (deleted, unchanged)", ["reason"]
)
EMBED_CACHE = Counter("memoryd_embed_cache_total", "Query-embedding cache lookups", ["result"])
QUEUE_LAG = Gauge("memoryd_queue_lag", "Pending messages of a durable consumer", ["consumer"])
RETRIEVE_SECONDS = Histogram(
    "memoryd_retrieve_seconds", "Retrieval latency by strategy and tier", ["strategy", "tier"], buckets=_LAT
)
RETRIEVE_FALLBACKS = Counter("memoryd_retrieve_fallbacks_total", "Tier fallbacks by reason", ["reason"])
RETRIEVE_QUERY_VECTOR_CACHE = Counter(
    "memoryd_retrieve_query_vector_cache_total", "Retrieve's own query-vector cache lookups", ["result"]
)
RETRIEVE_RESULTS = Histogram("memoryd_retrieve_results", "Results per query", buckets=(0, 1, 2, 5, 10, 20, 50, 100))
SLEEP_RUNS = Counter("memoryd_sleep_runs_total", "Sleep runs by status", ["status"])
DLQ_MESSAGES = Counter("memoryd_dlq_total", "Messages sent to the DLQ", ["stage"])
DLQ_REPLAYED = Counter("memoryd_dlq_replayed_total", "Dead letters republished by admin.dlq.replay", ["stage"])
#: Age of the oldest message a stream still holds unprocessed; compared with the stream's max age
#: (``memoryd_stream_max_age_seconds``) it says how long until JetStream starts dropping it.
STREAM_OLDEST_AGE = Gauge(
    "memoryd_stream_oldest_unprocessed_age_seconds", "Age of the oldest unprocessed message", ["stream"]
)
STREAM_MAX_AGE = Gauge("memoryd_stream_max_age_seconds", "Age at which a stream drops a message", ["stream"])


#: Families every service has.
SERVICE: tuple[Collector, ...] = (UP, RPC_REQUESTS, RPC_SECONDS)
#: Families of a service with a JetStream pull consumer (``shared.bus.consumer``).
CONSUMER: tuple[Collector, ...] = (JOBS, JOB_SECONDS, DLQ_MESSAGES, QUEUE_LAG, STREAM_OLDEST_AGE, STREAM_MAX_AGE)
#: Families of a service that calls the LLM (``shared.llm.LlmClient``).
LLM: tuple[Collector, ...] = (LLM_CALLS, LLM_TOKENS)
#: The process and runtime collectors every page carries.
RUNTIME: tuple[Collector, ...] = (PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR)


def service_registry(own: Iterable[Collector] = ()) -> CollectorRegistry:
    """A registry with the runtime collectors, ``SERVICE`` and the service's ``own`` families."""
    registry = CollectorRegistry(auto_describe=True)
    for collector in dict.fromkeys((*RUNTIME, *SERVICE, *own)):  # a group may repeat a family
        registry.register(collector)
    return registry


def serve_metrics(host: str, port: int, registry: CollectorRegistry) -> int:
    """Serve ``registry`` over HTTP; return the bound port (useful with port 0)."""
    try:
        server, _thread = start_http_server(port, addr=host, registry=registry)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise ConfigError("MEMORYD_METRICS_PORT", f"port {port} on {host} is already in use") from exc
        raise ConfigError("MEMORYD_METRICS_HOST", f"cannot listen on {host}:{port}: {exc}") from exc
    return int(server.server_port)
