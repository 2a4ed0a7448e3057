"""What the gateway lets out: upstream response headers, and what an owner key sees of the engine.

The proxy passes an upstream's answer through, but not its connection handling, cookies or the
headers that name its account, deployment or request (``pass_headers`` keeps an allow-list).
Owner keys see their own memory only: the engine's global counters (vectors, queue lag,
fallbacks) and the infrastructure's addresses in settings are for operator keys.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from memoryd.schemas.ops import EngineStatusResult, SettingsGetResult

#: Upstream response headers a caller gets (by name, or by prefix for the rate-limit family).
PASSED_HEADERS = frozenset({"content-type", "cache-control", "retry-after", "openai-processing-ms"})
PASSED_PREFIXES = ("x-ratelimit-",)
#: Settings that name or reach infrastructure (addresses, collections, credentials).
INFRASTRUCTURE_SETTINGS = frozenset(
    {"embeddingUrl", "embeddingApiKey", "qdrantUrl", "qdrantApiKey", "qdrantCollection"}
)
#: Per-store fields an owner key sees in ``engine.status`` (no counts, no details).
OWNER_STORE_FIELDS = ("active_signature", "healthy", "dim")
#: Fields of the embedding probe an owner key sees (no error text: it may name an address).
OWNER_PROBE_FIELDS = ("ok", "signature", "dim", "ms")


def pass_headers(headers: Iterable[tuple[str, str]]) -> dict[str, str]:
    """The upstream response headers a caller may see (the allow-listed ones, last value wins)."""
    return {
        name.lower(): value
        for name, value in headers
        if name.lower() in PASSED_HEADERS or name.lower().startswith(PASSED_PREFIXES)
    }


def owner_engine_status(status: EngineStatusResult) -> EngineStatusResult:
    """``engine.status`` as an owner key sees it: tiers, signatures and health, no global counters."""
    stores = {
        name: {k: v for k, v in entry.items() if k in OWNER_STORE_FIELDS}
        for name, entry in status.vector_stores.items()
        if isinstance(entry, Mapping)
    }
    embedding = dict(status.embedding)
    probe = embedding.get("probe")
    if isinstance(probe, Mapping):
        embedding["probe"] = {k: v for k, v in probe.items() if k in OWNER_PROBE_FIELDS}
    return msgspec.structs.replace(status, embedding=embedding, vector_stores=stores, fallbacks={}, lag={})


def owner_settings(result: SettingsGetResult) -> SettingsGetResult:
    """Effective settings as an owner key sees them: without the infrastructure's addresses."""

    def keep(values: Mapping[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in values.items() if k not in INFRASTRUCTURE_SETTINGS}

    return msgspec.structs.replace(result, settings=keep(result.settings), sources=keep(result.sources))
