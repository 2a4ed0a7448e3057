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

import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal, TypeVar

import msgspec

from shared.errors import ConfigError

Port = Annotated[int, msgspec.Meta(ge=0, le=65535)]
PositiveInt = Annotated[int, msgspec.Meta(ge=1)]


class NatsConfig(msgspec.Struct, frozen=True, kw_only=True):
    url: str = "nats://127.0.0.1:4222"
    user: str | None = None
    password: str | None = None
    connect_timeout_s: Annotated[float, msgspec.Meta(gt=0)] = 3.0
    stream_max_bytes: Annotated[int, msgspec.Meta(ge=-1)] = 1 << 30
    stream_max_age_days: Annotated[float, msgspec.Meta(gt=0)] = 7.0
    max_deliver: Annotated[int, msgspec.Meta(ge=1, le=100)] = 5
    ack_wait_s: Annotated[float, msgspec.Meta(gt=0)] = 30.0


class PgConfig(msgspec.Struct, frozen=True, kw_only=True):
    dsn: str = "postgresql://postgres@127.0.0.1:5432/memoryd"
    pool_min: Annotated[int, msgspec.Meta(ge=0)] = 1
    pool_max: PositiveInt = 10
    connect_timeout_s: Annotated[float, msgspec.Meta(gt=0)] = 5.0


class MetricsConfig(msgspec.Struct, frozen=True, kw_only=True):
    port: Port = 0  # 0 = a free port, printed at start
    host: str = "127.0.0.1"


class LogConfig(msgspec.Struct, frozen=True, kw_only=True):
    level: Literal["debug", "info", "warning", "error"] = "info"
    format: Literal["json", "console"] = "json"


class LlmConfig(msgspec.Struct, frozen=True, kw_only=True):
    """An OpenAI-compatible chat endpoint; none configured is a normal state."""

    base_url: str | None = None
    model: str | None = None
    api_key: str | None = None
    timeout_s: Annotated[float, msgspec.Meta(gt=0)] = 30.0
    daily_token_budget: Annotated[int, msgspec.Meta(ge=0)] = 200_000

    @property
    def configured(self) -> bool:
        return bool(self.base_url and self.model)


class QdrantConfig(msgspec.Struct, frozen=True, kw_only=True):
    url: str | None = None  # http(s)://host:6333, or ":memory:" / a path for local mode
    api_key: str | None = None
    collection: str = "memoryd"
    quantization: bool = False

    @property
    def configured(self) -> bool:
        return bool(self.url)


class DataConfig(msgspec.Struct, frozen=True, kw_only=True):
    """Where ``memoryd up`` keeps its state (``MEMORYD_DATA_DIR``)."""

    #: state directory of ``memoryd up`` (embedded servers, runtime.json, the built model variant); default ``.memoryd``
    data_dir: str | None = None


DATA_ENV_PREFIX = "MEMORYD_"


class ServiceConfig(msgspec.Struct, frozen=True, kw_only=True):
    """Everything a service process needs, one Struct per concern."""

    nats: NatsConfig = NatsConfig()
    pg: PgConfig = PgConfig()
    metrics: MetricsConfig = MetricsConfig()
    log: LogConfig = LogConfig()
    llm: LlmConfig = LlmConfig()
    qdrant: QdrantConfig = QdrantConfig()


_PREFIXES: dict[str, str] = {
    "nats": "MEMORYD_NATS_",
    "pg": "MEMORYD_PG_",
    "metrics": "MEMORYD_METRICS_",
    "log": "MEMORYD_LOG_",
    "llm": "MEMORYD_LLM_",
    "qdrant": "MEMORYD_QDRANT_",
}

T = TypeVar("T", bound=msgspec.Struct)
_PATH = re.compile(r"at `\$\.(\w+)`")


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
        match = _PATH.search(str(exc))
        setting = env_name(prefix, match.group(1)) if match else prefix.rstrip("_")
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
        for name, prefix in _PREFIXES.items()
    }
    return ServiceConfig(**parts)
