"""The lifecycle every service shares: start, serve, drain on SIGINT/SIGTERM, exit 0.

``serve`` configures logging (and trace export, when an OTLP endpoint is set), serves
metrics and ``/livez`` (``observability.endpoint``), connects to NATS (and Postgres when the
service needs it), provisions the streams, registers the micro service with its health
endpoints, lets the service wire its own endpoints and consumers, prints ``memoryd service
ready ...`` on stdout, and on a signal stops taking work, waits for what is in flight,
drains NATS, closes the pool and flushes the spans not yet exported.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import signal
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import version
from typing import Any, TypeVar

import asyncpg
import msgspec
from nats.aio.client import Client
from nats.js import JetStreamContext

from memoryd.connect import connect
from memoryd.errors import ConfigError
from memoryd.schemas.ops import HealthResult
from shared.settings.env import ServiceConfig, load_service_config

from . import native_heap
from .bus.provision import ensure_streams
from .bus.rpc import RpcServer
from .observability.endpoint import serve_metrics
from .observability.exporter import setup as setup_tracing
from .observability.liveness import Liveness
from .observability.logging import configure, get_logger, redact_text
from .observability.metrics import BUILD_INFO, UP, Collector, service_registry
from .secrets import Keyring

log = get_logger(__name__)

HealthCheck = Callable[[], Awaitable[str]]
S = TypeVar("S", bound=msgspec.Struct)
#: a service's ``load_settings``: its own frozen Struct from the environment (``ConfigError`` on a bad value)
LoadSettings = Callable[[Mapping[str, str]], msgspec.Struct]


@dataclass
class ServiceContext:
    """What a service's ``setup`` gets to wire itself."""

    name: str
    config: ServiceConfig
    nc: Client
    js: JetStreamContext
    rpc: RpcServer
    stop: asyncio.Event
    pool: asyncpg.Pool | None = None
    metrics_port: int = 0
    checks: dict[str, HealthCheck] = field(default_factory=dict)
    deep_checks: dict[str, HealthCheck] = field(default_factory=dict)  # only for ``health`` with deep=True
    tasks: list[asyncio.Task[Any]] = field(default_factory=list)
    closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    settings: msgspec.Struct | None = None  # the service's own Struct, read once by ``main``
    #: extra ``key=value`` fields of the ready line (e.g. the gateway's ``http=<url>``)
    ready_fields: dict[str, str] = field(default_factory=dict)
    #: the keys that open secrets stored in the database (``MEMORYD_SECRETS_KEY(_FILE)``)
    keyring: Keyring = field(default_factory=Keyring)
    #: the installed release (``importlib.metadata``; pyproject.toml is its one source)
    version: str = ""
    #: the event loop's heartbeat and the NATS connection, behind ``/livez``
    liveness: Liveness = field(default_factory=Liveness)

    def own(self, cls: type[S]) -> S:
        """The service's own settings (``MEMORYD_<SERVICE>_*``), read from the environment by ``main``."""
        if not isinstance(self.settings, cls):
            raise TypeError(f"service {self.name} was started without its {cls.__name__} (serve(settings=...))")
        return self.settings

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> None:
        """Run a background loop until ``stop``; its crash is logged and stops the service."""
        task = asyncio.create_task(coro, name=name)

        def done(t: asyncio.Task[Any]) -> None:
            if not t.cancelled() and t.exception() is not None:
                log.error("service.task_crashed", task=name, exc_info=t.exception())
                self.stop.set()

        task.add_done_callback(done)
        self.tasks.append(task)

    @property
    def db(self) -> asyncpg.Pool:
        assert self.pool is not None, "this service was started without a database"
        return self.pool


Setup = Callable[[ServiceContext], Awaitable[None]]


async def _health(ctx: ServiceContext, deep: bool) -> HealthResult:
    started = time.perf_counter()
    checks: dict[str, str] = {"nats": "ok" if ctx.nc.is_connected else "disconnected"}
    if ctx.pool is not None:
        try:
            await asyncio.wait_for(ctx.pool.fetchval("SELECT 1"), timeout=2)
            checks["postgres"] = "ok"
        except Exception as exc:
            checks["postgres"] = f"down: {type(exc).__name__}"
    for name, check in [*ctx.checks.items(), *(ctx.deep_checks.items() if deep else ())]:
        try:
            checks[name] = await asyncio.wait_for(check(), timeout=5)
        except Exception as exc:
            checks[name] = f"down: {type(exc).__name__}: {exc}"
    healthy = all(v.startswith("ok") for v in checks.values())
    return HealthResult(
        service=ctx.name,
        status="ok" if healthy else "degraded",
        version=ctx.version,
        checks=checks,
        latency_ms=round((time.perf_counter() - started) * 1000, 3),
    )


async def serve(
    name: str,
    config: ServiceConfig,
    setup: Setup,
    *,
    needs_db: bool = True,
    db_session_state: bool = True,
    stop: asyncio.Event | None = None,
    on_ready: Callable[[ServiceContext], None] | None = None,
    settings: msgspec.Struct | None = None,
    metrics: Iterable[Collector] = (),
) -> None:
    """Run one service until SIGINT/SIGTERM (or until ``stop`` is set, for in-process use);
    ``settings`` is the service's own Struct (``ServiceContext.own``), ``metrics`` its own
    metric families (its ``app.METRICS``), served with the runtime collectors and the
    families every service has."""
    release = version("memoryd")
    stop_tracing: Callable[[], None] | None = None
    if stop is None:  # a process of its own: its logging and its spans' service.name are this service's
        configure(name, config.log)
        stop_tracing = setup_tracing(name, config.tracing, release)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
    keyring = Keyring.from_config(config.secrets)  # a bad key stops the process before it connects
    liveness = Liveness()
    metrics_port = serve_metrics(config.metrics.host, config.metrics.port, service_registry(metrics), liveness)
    BUILD_INFO.labels(name, release).set(1)
    beating = asyncio.create_task(liveness.run(stop), name=f"{name}-liveness")
    try:
        nc = await connect(config.nats, f"memoryd-{name}")
    except BaseException:
        beating.cancel()
        raise
    liveness.nc = nc
    pool: asyncpg.Pool | None = None
    ctx: ServiceContext | None = None
    try:
        if needs_db:
            # imported here: the pool registers pgvector's codec, which needs numpy (~17 MB
            # resident) that a service without a database (the gateway) never uses
            from .db.pool import create_pool

            pool = await create_pool(config.pg, session_state=db_session_state)
        js = nc.jetstream()
        try:
            await ensure_streams(js, config.nats)
        except Exception as exc:
            where = redact_text(config.nats.url)
            raise ConfigError("MEMORYD_NATS_URL", f"JetStream unavailable at {where}: {exc}") from exc
        rpc = RpcServer(nc, name, release)
        ctx = ServiceContext(
            name=name,
            config=config,
            nc=nc,
            js=js,
            rpc=rpc,
            stop=stop,
            pool=pool,
            metrics_port=metrics_port,
            settings=settings,
            keyring=keyring,
            version=release,
            liveness=liveness,
        )
        await rpc.start()
        service_ctx = ctx

        async def health(req: Any) -> HealthResult:
            return await _health(service_ctx, bool(getattr(req, "deep", False)))

        await rpc.add_health(health)
        await setup(ctx)
        await rpc.wait_subscribed()  # the endpoints are subscribed on the server before "ready"
        UP.labels(name).set(1)
        metrics_url = f"http://{config.metrics.host}:{metrics_port}/metrics"
        extra = "".join(f" {k}={v}" for k, v in ctx.ready_fields.items())
        print(f"memoryd service ready name={name} metrics={metrics_url}{extra}", flush=True)
        log.info("service.ready", metrics=metrics_url, nats=config.nats.url)
        if on_ready is not None:
            on_ready(ctx)
        await stop.wait()
        log.info("service.stopping")
    finally:
        UP.labels(name).set(0)
        beating.cancel()
        if ctx is not None:
            await _shutdown(ctx)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(nc.drain(), timeout=10)
        if pool is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(pool.close(), timeout=10)
        if stop_tracing is not None:  # flush the spans still batched (bounded by the exporter's timeout)
            await asyncio.to_thread(stop_tracing)
        log.info("service.stopped")


async def _shutdown(ctx: ServiceContext) -> None:
    """Stop taking requests, let loops finish their current work, run the closers."""
    ctx.stop.set()
    await ctx.rpc.drain()
    if ctx.tasks:
        _done, pending = await asyncio.wait(ctx.tasks, timeout=15)
        for task in pending:
            task.cancel()
    for close in reversed(ctx.closers):
        with contextlib.suppress(Exception):
            await close()


def freeze_startup_heap(_ctx: ServiceContext | None = None) -> None:
    """Once a service process is ready: collect the start-up garbage, then move every object
    left (modules, classes, pools, settings: ~50k in the retrieve service) out of the
    collector's reach (``gc.freeze``). They live as long as the process anyway, and a full
    collection no longer walks them while a request waits (~8 ms each in the retrieve
    service, measured). Process entry points only: a test process running several stacks
    would keep each one's objects for good."""
    gc.collect()
    gc.freeze()


def main(
    name: str,
    setup: Setup,
    *,
    needs_db: bool = True,
    db_session_state: bool = True,
    load_settings: LoadSettings | None = None,
    env: Mapping[str, str] | None = None,
    metrics: Iterable[Collector] = (),
    bound_heap: bool = True,
) -> int:
    """Entry point of ``python -m services.<name>``: exit 0 after a clean stop, 2 on bad config.

    The environment is read here, once: the shared ``ServiceConfig`` and, with
    ``load_settings``, the service's own Struct; nothing below reads it again.
    ``db_session_state=False``: the service's queries leave no session state, so its pool
    skips the reset query (``db.pool.create_pool``). ``bound_heap``: bound glibc's allocator
    first (``native_heap``)."""
    try:
        environ = os.environ if env is None else env
        if bound_heap:
            native_heap.bound(environ)  # before the service starts its threads
        config = load_service_config(environ)
        settings = load_settings(environ) if load_settings is not None else None
        asyncio.run(
            serve(
                name,
                config,
                setup,
                needs_db=needs_db,
                db_session_state=db_session_state,
                settings=settings,
                metrics=metrics,
                on_ready=freeze_startup_heap,
            )
        )
    except ConfigError as exc:
        print(f"memoryd {name}: configuration error: {redact_text(exc.description)}", file=sys.stderr, flush=True)
        return 2
    return 0
