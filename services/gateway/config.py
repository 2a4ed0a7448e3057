"""The gateway's process settings (``MEMORYD_GATEWAY_*``), one frozen Struct built in ``app.setup``."""

from __future__ import annotations

from typing import Annotated

import msgspec

from memoryd.schemas.base import MAX_PAYLOAD_BYTES
from shared.settings.env import LlmConfig, Port

Seconds = Annotated[float, msgspec.Meta(gt=0)]
Limit = Annotated[int, msgspec.Meta(ge=0)]
DEFAULT_PORT = 8420


class GatewayConfig(msgspec.Struct, frozen=True, kw_only=True):
    """The HTTP gateway's own settings (``MEMORYD_GATEWAY_*``)."""

    host: str = "127.0.0.1"  # the address the HTTP server listens on (0.0.0.0 in a container)
    port: Port = DEFAULT_PORT  # the HTTP port; 0 = a free port (printed in the ready line as http=...)
    #: the chat proxy's upstream, an OpenAI-compatible base URL ending in /v1 (default MEMORYD_LLM_BASE_URL)
    upstream_url: str | None = None
    upstream_api_key: str | None = None  # the upstream's API key (default MEMORYD_LLM_API_KEY)
    upstream_timeout_s: Seconds = 300.0  # how long the proxy waits between bytes of the upstream's answer
    rpc_timeout_s: Seconds = 10.0  # how long a REST call waits for the service behind it
    #: how long the proxy waits for memory (retrieve + inject) before forwarding without it
    memory_timeout_s: Seconds = 3.0
    key_cache_s: Annotated[float, msgspec.Meta(ge=0)] = 5.0  # seconds a key lookup is cached (revocation delay)
    max_body_bytes: Annotated[int, msgspec.Meta(ge=1024)] = MAX_PAYLOAD_BYTES  # the largest request body taken
    #: open connections plus running requests the HTTP server takes; past it a request gets 503
    max_connections: Annotated[int, msgspec.Meta(ge=1)] = 1024
    #: how long a connection may take to send a request's headers (from connecting, or after a reply)
    header_timeout_s: Seconds = 10.0
    #: how long an idle keep-alive connection stays open after a reply
    keep_alive_s: Annotated[int, msgspec.Meta(ge=1)] = 5
    #: connections the chat proxy keeps to its upstreams (all of them together)
    upstream_connections: Annotated[int, msgspec.Meta(ge=1)] = 256
    #: how long a proxied call waits for a free upstream connection (and to connect) before a 502
    upstream_acquire_s: Seconds = 10.0
    #: how long the proxy waits for a caller to take the next piece of a streamed answer
    stream_write_timeout_s: Seconds = 60.0
    #: LLM tokens (prompt + completion, as the upstream reports them) one API key may spend through the proxy
    #: per UTC day, for keys that set none (`memoryd keys create --max-tokens-per-day`); 0 = unlimited
    key_max_tokens_per_day: Limit = 0
    #: proxied chat calls one API key may make per minute, for keys that set none; 0 = unlimited
    key_requests_per_minute: Limit = 0
    #: streamed proxy answers one API key may have open at once, for keys that set none; 0 = unlimited
    key_max_streams: Limit = 0
    #: the models the proxy forwards for keys that set none, comma-separated; empty = any model
    key_models: str = ""
    #: chat events one API key may publish through POST /v1/events per second, for keys that set none; 0 = unlimited
    key_events_per_second: Limit = 0
    #: how often the gateway samples activity for the Studio's last hour (GET /v1/activity/history)
    activity_history_s: Annotated[float, msgspec.Meta(ge=0.1, le=3600)] = 60.0
    #: how long a streamed answer holds its slot without renewal (a gateway that dies frees its slots by then)
    stream_slot_lease_s: Annotated[float, msgspec.Meta(ge=1)] = 30.0

    def with_llm_defaults(self, llm: LlmConfig) -> GatewayConfig:
        """Fill the upstream from ``MEMORYD_LLM_*`` where ``MEMORYD_GATEWAY_UPSTREAM_*`` is not set."""
        return msgspec.structs.replace(
            self,
            upstream_url=self.upstream_url or llm.base_url,
            upstream_api_key=self.upstream_api_key or llm.api_key,
        )
