"""Every ``memoryd_*`` Prometheus metric, defined once, and each service's registry.

Every name says its unit (``_seconds``, ``_messages``, ``_texts``; ``_total`` for counters).
A metric is defined here once; the service that owns it registers it. Each service serves
its own registry (``service_registry``): the process, platform and GC collectors, the
families every service has (``SERVICE``: up, RPCs), the groups it uses (``CONSUMER`` for a
JetStream stage, ``LLM`` for a service that calls the LLM) and its own families, listed
as ``METRICS`` in ``services/<name>/app.py``. So ``job="ingest"`` carries no embed metric.
The definitions also stay in prometheus_client's default registry, which no endpoint
serves: in-process tests read values there whatever service counted them. The HTTP
endpoint that serves a registry is ``endpoint.py``.
"""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import (
    GC_COLLECTOR,
    PLATFORM_COLLECTOR,
    PROCESS_COLLECTOR,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
)
from prometheus_client.registry import Collector

_LAT = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)

UP = Gauge("memoryd_up", "1 while the service runs", ["service"])
BUILD_INFO = Gauge("memoryd_build_info", "Always 1: the service's name and version", ["service", "version"])
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
    "memoryd_embed_batch_texts", "Texts per inference batch", buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256)
)
EMBED_SECONDS = Histogram("memoryd_embed_inference_seconds", "Inference time per batch", buckets=_LAT)
EMBED_TEXTS = Counter("memoryd_embed_texts_total", "Texts embedded, by path", ["path"])
EMBED_SKIPPED = Counter(
    "memoryd_embed_skipped_total", "Embed jobs acked without embedding (deleted, unchanged)", ["reason"]
)
EMBED_CACHE = Counter("memoryd_embed_cache_total", "Query-embedding cache lookups", ["result"])
QUEUE_LAG = Gauge("memoryd_queue_lag_messages", "Pending messages of a durable consumer", ["consumer"])
RETRIEVE_SECONDS = Histogram(
    "memoryd_retrieve_seconds", "Retrieval latency by strategy and tier", ["strategy", "tier"], buckets=_LAT
)
RETRIEVE_FALLBACKS = Counter("memoryd_retrieve_fallbacks_total", "Tier fallbacks by reason", ["reason"])
RETRIEVE_QUERY_VECTOR_CACHE = Counter(
    "memoryd_retrieve_query_vector_cache_total", "Retrieve's own query-vector cache lookups", ["result"]
)
RETRIEVE_KEYWORD_TIER = Counter(
    "memoryd_retrieve_keyword_tier_total",
    "Keyword searches with keywordIndex=memory by who ranked them, and why the statement did",
    ["keyword_tier", "reason"],
)
RETRIEVE_RESULTS = Histogram("memoryd_retrieve_results", "Results per query", buckets=(0, 1, 2, 5, 10, 20, 50, 100))
SLEEP_RUNS = Counter("memoryd_sleep_runs_total", "Sleep runs by status", ["status"])
#: The longest streak of consecutive failed sleep runs of any one owner (0: none failing).
SLEEP_FAILURE_STREAK = Gauge(
    "memoryd_sleep_failure_streak_runs", "Longest streak of consecutive failed sleep runs of any owner"
)
#: Secrets of the global settings row this service cannot open (health check ``secrets`` degraded).
SECRETS_UNAVAILABLE = Gauge(
    "memoryd_secrets_unavailable_keys", "Secrets of the global settings this service cannot open"
)
DLQ_MESSAGES = Counter("memoryd_dlq_total", "Messages sent to the DLQ", ["stage"])
DLQ_REPLAYED = Counter("memoryd_dlq_replayed_total", "Dead letters republished by admin.dlq.replay", ["stage"])
#: Age of the oldest message a stream still holds unprocessed; compared with the stream's max age
#: (``memoryd_stream_max_age_seconds``) it says how long until JetStream starts dropping it.
STREAM_OLDEST_AGE = Gauge(
    "memoryd_stream_oldest_unprocessed_age_seconds", "Age of the oldest unprocessed message", ["stream"]
)
STREAM_MAX_AGE = Gauge("memoryd_stream_max_age_seconds", "Age at which a stream drops a message", ["stream"])
#: The gateway's HTTP requests, by route template (``/v1/memories/{id}``, never the raw path),
#: method and status; unmatched paths share the route ``unmatched``.
HTTP_REQUESTS = Counter(
    "memoryd_http_requests_total", "HTTP requests by route template, method and status", ["route", "method", "status"]
)
HTTP_SECONDS = Histogram(
    "memoryd_http_request_duration_seconds",
    "HTTP request time until the last byte of the response, by route template, method and status",
    ["route", "method", "status"],
    buckets=(*_LAT, 10.0, 30.0, 60.0),
)
#: The chat proxy's upstream: time to the response headers, by the upstream's status
#: (``unreachable`` when no answer came).
PROXY_UPSTREAM_SECONDS = Histogram(
    "memoryd_proxy_upstream_duration_seconds",
    "Time until the upstream LLM's response headers, by status",
    ["status"],
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0),
)
#: What memory did for a proxied call (the ``x-memory-status`` header): ``injected``, ``none``,
#: ``skipped`` (the caller opted out) or ``unavailable`` (memoryd did not answer in time).
PROXY_MEMORY = Counter("memoryd_proxy_memory_total", "Proxied chat calls by memory outcome", ["outcome"])

# Label values known in advance exist at 0 from the start, so ``increase()`` and the alerts
# see the first event rather than a series appearing out of nothing.
for _outcome in ("injected", "none", "skipped", "unavailable"):
    PROXY_MEMORY.labels(_outcome)
for _status in ("ok", "noop", "degraded", "refreshed", "aborted", "failed"):
    SLEEP_RUNS.labels(_status)
for _kind in ("stored", "republish", "duplicate", "no_memory", "disabled"):  # ingest's event outcomes
    EVENTS.labels(_kind)


#: Families every service has.
SERVICE: tuple[Collector, ...] = (UP, BUILD_INFO, RPC_REQUESTS, RPC_SECONDS, SECRETS_UNAVAILABLE)
#: Families of a service with a JetStream pull consumer (``shared.bus.consumer``).
CONSUMER: tuple[Collector, ...] = (JOBS, JOB_SECONDS, DLQ_MESSAGES, QUEUE_LAG, STREAM_OLDEST_AGE, STREAM_MAX_AGE)
#: Families of a service that calls the LLM (``shared.llm.LlmClient``).
LLM: tuple[Collector, ...] = (LLM_CALLS, LLM_TOKENS)
#: Families of the HTTP gateway.
GATEWAY: tuple[Collector, ...] = (HTTP_REQUESTS, HTTP_SECONDS, PROXY_UPSTREAM_SECONDS, PROXY_MEMORY)
#: The process and runtime collectors every page carries.
RUNTIME: tuple[Collector, ...] = (PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR)


def service_registry(own: Iterable[Collector] = ()) -> CollectorRegistry:
    """A registry with the runtime collectors, ``SERVICE`` and the service's ``own`` families."""
    registry = CollectorRegistry(auto_describe=True)
    for collector in dict.fromkeys((*RUNTIME, *SERVICE, *own)):  # a group may repeat a family
        registry.register(collector)
    return registry
