"""What every gateway endpoint uses: the NATS connection, the settings, the key cache, the upstream, the
per-key limit state."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nats.aio.client import Client
from nats.js import JetStreamContext

from memoryd.rpc import call
from memoryd.schemas import RpcOp

from .adapters.keys import KeyCache
from .adapters.limits_kv import LimitStore
from .adapters.upstream import Upstream
from .config import GatewayConfig


@dataclass
class Gateway:
    nc: Client
    js: JetStreamContext
    config: GatewayConfig
    keys: KeyCache
    upstream: Upstream
    limits: LimitStore

    async def call(
        self, op: str | RpcOp, request: Any, *, timeout: float | None = None, subject: str | None = None
    ) -> Any:
        """One RPC (the result Struct, or the typed error raised)."""
        return await call(self.nc, op, request, timeout=timeout or self.config.rpc_timeout_s, subject=subject)
