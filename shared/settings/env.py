"""Process configuration: one frozen Struct per concern, built from ``MEMORYD_*`` variables.

``load(NatsConfig, env)`` reads ``MEMORYD_NATS_<FIELD>`` for every field (``url`` ->
``MEMORYD_NATS_URL``), converts strings to the field types and raises ``ConfigError``
naming the variable on any bad value. Nothing here reads the environment at import
time: ``shared.service.main`` reads ``os.environ`` once, into ``ServiceConfig`` and the
service's own Struct (its ``load_settings``), and passes them down.

The rule: process environment holds *deployment* knobs (addresses, credentials, pool sizes,
ports, worker counts, timeouts of infrastructure); what changes the answers a user gets
(boosts, weights, depths, strategies, budgets) is a runtime setting per owner
(``shared.settings.memory``). ``docs/configuration.md`` lists both, generated from the
Structs and their field comments (``python -m services.configuration``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal, TypeVar

import msgspec

from memoryd.codec import validation_failed
from memoryd.errors import ConfigError

Port = Annotated[int, msgspec.Meta(ge=0, le=65535)]
PositiveInt = Annotated[int, msgspec.Meta(ge=1)]


class NatsConfig(msgspec.Struct, frozen=True, kw_only=True):
    #: NATS server URL(s), comma-separated; `memoryd up` starts an embedded server unless set
    url: str = "nats://127.0.0.1:4222"
    #: NATS user (with NATS authorization on)
    user: str | None = None
    #: NATS password
    password: str | None = None
    #: seconds to wait for NATS at start before the process gives up
    connect_timeout_s: Annotated[float, msgspec.Meta(gt=0)] = 3.0
    #: per-stream limit of unprocessed events and jobs (-1 = none); at the limit new messages are rejected, nothing
    #: accepted is dropped
    stream_max_bytes: Annotated[int, msgspec.Meta(ge=-1)] = 1 << 30
    #: per-stream age limit of unprocessed messages (the dead-letter stream keeps 30 days)
    stream_max_age_days: Annotated[float, msgspec.Meta(gt=0)] = 7.0
    #: deliveries before a failing message goes to the dead-letter stream `MEM_DLQ` (transient failures never do)
    max_deliver: Annotated[int, msgspec.Meta(ge=1, le=100)] = 5
    #: redelivery timeout of a job consumer; long work sends `in_progress`
    ack_wait_s: Annotated[float, msgspec.Meta(gt=0)] = 30.0
    #: replicas of every stream and the activity bucket: 1 on one server, 3 on a JetStream cluster (an acknowledged
    #: event then survives the loss of a node); services update existing streams at start
    replicas: Annotated[int, msgspec.Meta(ge=1, le=5)] = 1
    #: warn (log `stream.unprocessed_aging`) when a stream's oldest unprocessed message has lived this fraction of
    #: the stream's age limit; the age is metric `memoryd_stream_oldest_unprocessed_age_seconds`
    age_warning_fraction: Annotated[float, msgspec.Meta(gt=0, lt=1)] = 0.5


class PgConfig(msgspec.Struct, frozen=True, kw_only=True):
    #: PostgreSQL (with pgvector) to use; `memoryd up` starts an embedded one unless set
    dsn: str = "postgresql://postgres@127.0.0.1:5432/memoryd"
    #: connections each pool keeps open (one pool per process; retrieve has two, the second for the candidates' rows)
    pool_min: Annotated[int, msgspec.Meta(ge=0)] = 1
    #: most connections one pool opens (retrieve: up to twice this)
    pool_max: PositiveInt = 10
    #: seconds to wait for one PostgreSQL connection
    connect_timeout_s: Annotated[float, msgspec.Meta(gt=0)] = 5.0


class MetricsConfig(msgspec.Struct, frozen=True, kw_only=True):
    #: port of the Prometheus endpoint; 0 = a free port, printed at start
    port: Port = 0
    #: address the Prometheus endpoint listens on
    host: str = "127.0.0.1"


class LogConfig(msgspec.Struct, frozen=True, kw_only=True):
    #: least severe log level written (structlog, on stderr)
    level: Literal["debug", "info", "warning", "error"] = "info"
    #: `json` lines, or `console` for people
    format: Literal["json", "console"] = "json"


class TracingConfig(msgspec.Struct, frozen=True, kw_only=True):
    """OpenTelemetry's standard variables that decide whether spans are exported (the SDK reads the
    other `OTEL_*` ones itself: `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_TRACES_SAMPLER`, `OTEL_BSP_*`)."""

    #: OTLP/HTTP base URL of a trace collector (Jaeger, Tempo, an OpenTelemetry Collector), e.g.
    #: `http://127.0.0.1:4318`: spans go to `<url>/v1/traces` with `service.name` `memoryd-<service>`; unset = none
    #: exported (the W3C `traceparent` header is still passed on from message to message)
    exporter_otlp_endpoint: str | None = None
    #: the full OTLP/HTTP traces URL, for a collector that is not at `<endpoint>/v1/traces`
    exporter_otlp_traces_endpoint: str | None = None
    #: `none` exports no spans even with an endpoint set; `otlp` (OTLP/HTTP protobuf) is the only exporter
    traces_exporter: Literal["otlp", "none"] = "otlp"
    #: `true` turns the OpenTelemetry SDK off (nothing recorded or exported; propagation continues)
    sdk_disabled: bool = False

    @property
    def traces_url(self) -> str | None:
        """Where spans are posted, or None when nothing is to be exported."""
        if self.sdk_disabled or self.traces_exporter == "none":
            return None
        if self.exporter_otlp_traces_endpoint:
            return self.exporter_otlp_traces_endpoint
        if self.exporter_otlp_endpoint:
            return self.exporter_otlp_endpoint.rstrip("/") + "/v1/traces"
        return None


class LlmConfig(msgspec.Struct, frozen=True, kw_only=True):
    """An OpenAI-compatible chat endpoint; none configured is a normal state."""

    #: OpenAI-compatible endpoint, e.g. `http://host:11434/v1`; unset = no LLM (a normal state: LLM work is skipped)
    base_url: str | None = None
    #: chat model name sent to the endpoint
    model: str | None = None
    #: bearer token for the endpoint
    api_key: str | None = None
    #: seconds per LLM request (one retry on a timeout, network error or 5xx)
    timeout_s: Annotated[float, msgspec.Meta(gt=0)] = 30.0
    #: LLM tokens one owner may spend per UTC day (0 = unlimited)
    daily_token_budget: Annotated[int, msgspec.Meta(ge=0)] = 200_000

    @property
    def configured(self) -> bool:
        return bool(self.base_url and self.model)


class QdrantConfig(msgspec.Struct, frozen=True, kw_only=True):
    #: Qdrant server URL (`http(s)://host:6333`), or `:memory:` / an absolute path for qdrant-client's local mode;
    #: unset = no Qdrant
    url: str | None = None
    #: Qdrant API key
    api_key: str | None = None
    #: collection name prefix in Qdrant
    collection: str = "memoryd"
    #: int8 scalar quantization with rescoring in Qdrant
    quantization: bool = False

    @property
    def configured(self) -> bool:
        return bool(self.url)


class SecretsConfig(msgspec.Struct, frozen=True, kw_only=True):
    """The key that seals secrets stored in the database (``shared.secrets``)."""

    #: key (32 bytes in base64: `memoryd secrets generate-key`) that encrypts API keys stored in runtime settings;
    #: `memoryd up` generates one into `<data-dir>/secrets.key`
    key: str | None = None
    #: file of keys, one a line: the first encrypts, every one decrypts (rotation: put a new key first)
    key_file: str | None = None


class DataConfig(msgspec.Struct, frozen=True, kw_only=True):
    """Where ``memoryd up`` keeps its state (``MEMORYD_DATA_DIR``)."""

    #: state directory of `memoryd up` (embedded servers, runtime.json, the built model variant); default `.memoryd`
    data_dir: str | None = None


DATA_ENV_PREFIX = "MEMORYD_"


class ClientConfig(msgspec.Struct, frozen=True, kw_only=True):
    """How an application's ``MemoryClient.connect()`` finds NATS without arguments
    (``memoryd.credentials`` reads it, with ``MEMORYD_NATS_URL`` and the data directory), and
    ``Memory()`` / ``AsyncMemory()`` the gateway (``memoryd.http.calls.target`` reads it)."""

    #: a credentials file (JSON url, user, password, inbox prefix, owners), e.g. `<data-dir>/client.json`
    nats_credentials: str | None = None
    #: the gateway `Memory`/`AsyncMemory` call when given no URL (unset: `http://127.0.0.1:8420`)
    url: str | None = None
    #: the API key `Memory`/`AsyncMemory` send when given none (`memoryd keys create` prints one)
    key: str | None = None


class ServiceConfig(msgspec.Struct, frozen=True, kw_only=True):
    """Everything a service process needs, one Struct per concern."""

    nats: NatsConfig = NatsConfig()
    pg: PgConfig = PgConfig()
    metrics: MetricsConfig = MetricsConfig()
    log: LogConfig = LogConfig()
    llm: LlmConfig = LlmConfig()
    qdrant: QdrantConfig = QdrantConfig()
    secrets: SecretsConfig = SecretsConfig()
    tracing: TracingConfig = TracingConfig()


SERVICE_ENV_PREFIXES: dict[str, str] = {
    "nats": "MEMORYD_NATS_",
    "pg": "MEMORYD_PG_",
    "metrics": "MEMORYD_METRICS_",
    "log": "MEMORYD_LOG_",
    "llm": "MEMORYD_LLM_",
    "qdrant": "MEMORYD_QDRANT_",
    "secrets": "MEMORYD_SECRETS_",
    "tracing": "OTEL_",  # OpenTelemetry's own names, as every OTel SDK reads them
}

T = TypeVar("T", bound=msgspec.Struct)


def env_name(prefix: str, field: str) -> str:
    """``("MEMORYD_NATS_", "url")`` -> ``MEMORYD_NATS_URL``."""
    return f"{prefix}{field.upper()}"


def load(cls: type[T], prefix: str, env: Mapping[str, str], overrides: Mapping[str, Any] | None = None) -> T:
    """Build ``cls`` from ``<prefix><FIELD>`` variables, then ``overrides`` (CLI flags)."""
    raw: dict[str, Any] = {}
    for field in cls.__struct_fields__:
        value = env.get(env_name(prefix, field))
        if value is not None and value != "":
            raw[field] = value
    for key, value in (overrides or {}).items():
        if value is not None:
            raw[key] = value
    try:
        return msgspec.convert(raw, cls, strict=False)
    except msgspec.ValidationError as exc:
        failed = validation_failed(exc)
        name = (failed.field or "").removeprefix("$.")
        setting = env_name(prefix, name) if name.isidentifier() else prefix.rstrip("_")
        raise ConfigError(setting, str(exc).split(" - at ")[0]) from exc


def refuse_retired(env: Mapping[str, str], retired: Mapping[str, str]) -> None:
    """A variable that became a runtime setting stops the process, naming the setting to use
    instead (silently ignoring it would change answers without a word)."""
    for name, instead in retired.items():
        if env.get(name, "") != "":
            raise ConfigError(name, f"no longer read: set the runtime setting {instead} (memoryd settings set)")


def load_service_config(
    env: Mapping[str, str], overrides: Mapping[str, Mapping[str, Any]] | None = None
) -> ServiceConfig:
    """Build the full ``ServiceConfig`` from the environment (and per-concern overrides)."""
    overrides = overrides or {}
    parts = {
        name: load(type(getattr(ServiceConfig(), name)), prefix, env, overrides.get(name))
        for name, prefix in SERVICE_ENV_PREFIXES.items()
    }
    return ServiceConfig(**parts)
