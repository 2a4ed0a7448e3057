"""The gateway's probes: ``/livez`` (not stuck), ``/readyz`` (can serve), ``/healthz`` (process up).

Ready means the gateway can serve: its NATS connection is up and it is not stopping. Memory
being degraded does not make a pod unready (the proxy goes ahead without memory, REST answers
503 per request), so one backend service down never takes every gateway out of the load
balancer. Without a key ``/readyz`` says only ``ready`` / ``not ready`` and asks nothing of the
backend; an operator key adds every service's deep health, cached ``ttl_s`` so probes cannot
turn into a load. ``/livez`` is answered by the event loop itself, so a stuck loop fails it.
"""

from __future__ import annotations

import asyncio
import time

from starlette.requests import Request
from starlette.responses import Response

from memoryd.errors import Forbidden
from shared.observability.liveness import Liveness

from ..context import Gateway
from ..schemas import Readiness, ServicesHealth
from .common import authenticate, json_response, problem_response
from .special import services_health

READY, NOT_READY = "ready", "not ready"


class Probes:
    def __init__(self, gw: Gateway, liveness: Liveness, stopping: asyncio.Event, ttl_s: float = 5.0) -> None:
        self.gw = gw
        self.liveness = liveness
        self.stopping = stopping
        self.ttl_s = ttl_s
        self._details: tuple[float, ServicesHealth] | None = None
        self._lock = asyncio.Lock()

    def ready(self) -> bool:
        return self.gw.nc.is_connected and not self.stopping.is_set()

    async def details(self) -> ServicesHealth:
        """Every service's deep health, asked at most once per ``ttl_s``."""
        async with self._lock:
            if self._details is None or time.monotonic() - self._details[0] > self.ttl_s:
                self._details = (time.monotonic(), await services_health(self.gw))
            return self._details[1]

    async def readyz(self, request: Request) -> Response:
        ready = self.ready()
        status = READY if ready else NOT_READY
        code = 200 if ready else 503
        if "authorization" not in request.headers and "x-api-key" not in request.headers:
            return json_response(Readiness(status=status), status=code)
        try:
            key = await authenticate(self.gw, request)
            if key.role != "operator":
                raise Forbidden("the health details of /readyz need an operator key")
            return json_response(Readiness(status=status, memory=await self.details()), status=code)
        except Exception as exc:
            return problem_response(exc)

    async def livez(self, request: Request) -> Response:
        alive, reason = self.liveness.state()
        return json_response({"status": "ok" if alive else reason}, status=200 if alive else 503)


async def healthz(request: Request) -> Response:
    """The process is up (no dependency is asked)."""
    return json_response({"status": "ok"})
