"""The gateway's process settings (``MEMORYD_GATEWAY_*``), one frozen Struct built in ``app.setup``."""

from __future__ import annotations

from typing import Annotated

import msgspec

from memoryd.schemas.base import MAX_PAYLOAD_BYTES
from shared.settings.env import LlmConfig, Port

Seconds = Annotated[float, msgspec.Meta(gt=0)]
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

    def with_llm_defaults(self, llm: LlmConfig) -> GatewayConfig:
        """Fill the upstream from ``MEMORYD_LLM_*`` where ``MEMORYD_GATEWAY_UPSTREAM_*`` is not set."""
        return msgspec.structs.replace(
            self,
            upstream_url=self.upstream_url or llm.base_url,
            upstream_api_key=self.upstream_api_key or llm.api_key,
        )
