"""Real servers and in-process services for tests and benchmarks.

- ``fresh_database``: a new database on a running PostgreSQL, migrated, dropped after.
- ``run_services``: start services as asyncio tasks in this process (fast, same code
  path as ``python -m services.<name>`` except signals: each service's own settings are
  read from ``os.environ`` when it starts, as its ``__main__`` does), stopped on exit.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import os
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import asyncpg

from shared.db.migrate import migrate
from shared.secrets import generate_key
from shared.service import ServiceContext, serve
from shared.settings.env import ServiceConfig, load_service_config


def base_dsn(dsn: str, database: str) -> str:
    """The same server with another database name."""
    head, _sep, _db = dsn.rpartition("/")
    return f"{head}/{database}"


@contextlib.asynccontextmanager
async def fresh_database(admin_dsn: str, prefix: str = "t") -> AsyncIterator[str]:
    """Create, migrate, yield the DSN of, and finally drop a uniquely named database."""
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    admin = await asyncpg.connect(admin_dsn)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    dsn = base_dsn(admin_dsn, name)
    conn = await asyncpg.connect(dsn)
    try:
        await migrate(conn)
    finally:
        await conn.close()
    try:
        yield dsn
    finally:
        admin = await asyncpg.connect(admin_dsn)
        try:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await admin.close()


#: the secrets key of in-process test services (``MEMORYD_SECRETS_KEY``), one per test run
TEST_SECRETS_KEY = generate_key()


def service_config(nats_url: str, pg_dsn: str, extra: Mapping[str, str] | None = None) -> ServiceConfig:
    env = {
        "MEMORYD_NATS_URL": nats_url,
        "MEMORYD_PG_DSN": pg_dsn,
        "MEMORYD_METRICS_PORT": "0",
        "MEMORYD_SECRETS_KEY": TEST_SECRETS_KEY,
        **(extra or {}),
    }
    return load_service_config(env)


@contextlib.asynccontextmanager
async def run_services(
    names: Sequence[str], config: ServiceConfig, *, timeout: float = 30.0
) -> AsyncIterator[dict[str, ServiceContext]]:
    """Run ``services.<name>`` in-process; yield their contexts once all are ready."""
    stop = asyncio.Event()
    contexts: dict[str, ServiceContext] = {}
    tasks: list[asyncio.Task[Any]] = []
    for name in names:
        app = importlib.import_module(f"services.{name}.app")
        ready = asyncio.Event()

        def on_ready(ctx: ServiceContext, ready: asyncio.Event = ready) -> None:
            contexts[ctx.name] = ctx
            ready.set()

        session_state = getattr(app, "DB_SESSION_STATE", True)  # as the service's __main__ passes it
        task = asyncio.create_task(
            serve(
                name,
                config,
                app.setup,
                needs_db=app.NEEDS_DB,
                db_session_state=session_state,
                metrics=app.METRICS,
                stop=stop,
                on_ready=on_ready,
                settings=app.load_settings(os.environ),
            ),
            name=f"svc-{name}",
        )
        tasks.append(task)
        waiter = asyncio.create_task(ready.wait())
        done, _ = await asyncio.wait({waiter, task}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        if waiter not in done:
            waiter.cancel()
            stop.set()
            await asyncio.gather(*tasks, return_exceptions=True)
            if task.done() and task.exception():
                raise task.exception()  # type: ignore[misc]
            raise TimeoutError(f"service {name} not ready within {timeout} s")
    try:
        yield contexts
    finally:
        stop.set()
        for ctx in contexts.values():
            ctx.stop.set()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        errors = [r for r in results if isinstance(r, BaseException)]
        if errors:
            raise errors[0]


async def consumers_idle(nc: Any, consumers: Sequence[tuple[str, str]]) -> bool:
    """Whether each ``(stream, durable)`` consumer has nothing pending and nothing unacknowledged."""
    js = nc.jetstream()
    for stream, durable in consumers:
        info = await js.consumer_info(stream, durable)
        if info.num_pending or info.num_ack_pending:
            return False
    return True
