"""Server-side commands: ``up``, ``serve``, ``migrate``, ``schemas``.

They need the ``server`` extra (embedded NATS and PostgreSQL, the services); their imports
are inside the commands, so the client commands work with the base install alone.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import click

from memoryd.cli.common import CONTEXT_SETTINGS, data_dir, run
from memoryd.local.scrape import DEFAULT_METRICS_PORT

SERVICES = ("ingest", "extract", "embed", "retrieve", "sleep", "gateway")
PORT = click.IntRange(0, 65535)
POSITIVE = click.IntRange(min=1)


@click.command("up", context_settings=CONTEXT_SETTINGS)
@click.option(
    "--data-dir",
    "data_dir_flag",
    metavar="DIR",
    help="where NATS and PostgreSQL keep data (default $MEMORYD_DATA_DIR or .memoryd)",
)
@click.option(
    "--nats-port", type=PORT, default=4222, show_default=True, help="NATS port for applications (0 = a free port)"
)
@click.option("--pg-port", type=PORT, default=0, show_default=True, help="0 = a free port")
@click.option(
    "--metrics-port",
    type=PORT,
    default=DEFAULT_METRICS_PORT,
    show_default=True,
    help="first metrics port; the i-th service of the ready line uses +i (0 = free ports)",
)
@click.option("--embed-processes", type=POSITIVE, default=1, show_default=True, help="embed worker processes")
@click.option("--gateway-port", type=PORT, default=8420, show_default=True, help="the HTTP gateway (0 = a free port)")
@click.option("--gateway-host", default="127.0.0.1", show_default=True, help="the HTTP gateway's address")
@click.option("--no-auth", is_flag=True, help="run the embedded NATS without users (not recommended)")
def up(
    data_dir_flag: str | None,
    nats_port: int,
    pg_port: int,
    metrics_port: int,
    embed_processes: int,
    gateway_port: int,
    gateway_host: str,
    no_auth: bool,
) -> int:
    """Run everything here (embedded NATS, PostgreSQL, services).

    Prints `memoryd ready ...` when every service answers; Ctrl-C stops it all.
    """
    from memoryd.local.up import UpOptions, run_up

    opts = UpOptions(
        data_dir=data_dir(data_dir_flag),
        nats_port=nats_port,
        pg_port=pg_port,
        metrics_port=metrics_port,
        embed_processes=embed_processes,
        auth=not no_auth,
        gateway_port=gateway_port,
        gateway_host=gateway_host,
    )
    return run(run_up(opts))


@click.command("serve", context_settings=CONTEXT_SETTINGS)
@click.argument("service", type=click.Choice(SERVICES), metavar="SERVICE")
@click.option(
    "--processes", type=POSITIVE, default=1, show_default=True, help="worker processes (embed scales this way)"
)
@click.option("--metrics-port", type=PORT, default=None, help="first metrics port (replica i uses +i)")
def serve(service: str, processes: int, metrics_port: int | None) -> int:
    """Run one service against external NATS and PostgreSQL.

    SERVICE is one of ingest, extract, embed, retrieve, sleep, gateway. Its settings come from the
    MEMORYD_* environment variables.
    """
    if metrics_port is not None:
        os.environ["MEMORYD_METRICS_PORT"] = str(metrics_port)
    argv = [sys.executable, "-m", f"services.{service}"]
    if processes == 1:
        os.execv(sys.executable, argv)
    return run(_serve_many(service, processes, metrics_port))


async def _serve_many(service: str, processes: int, metrics_port: int | None) -> int:
    import signal

    from memoryd.local.supervisor import Supervisor, child_env

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    sup = Supervisor(child_env({}))
    for i in range(processes):
        port = str(metrics_port + i) if metrics_port else "0"
        sup.add(service, i, env={"MEMORYD_METRICS_PORT": port})
    try:
        await sup.start_all()
        for child in sup.children:
            print(f"memoryd service ready name={service} replica={child.index} metrics={child.metrics_url}", flush=True)
        await stop.wait()
    finally:
        await sup.stop_all()
    return 0


@click.command("migrate", context_settings=CONTEXT_SETTINGS)
@click.option("--dsn", help="PostgreSQL DSN (default $MEMORYD_PG_DSN)")
def migrate(dsn: str | None) -> int:
    """Apply pending SQL migrations."""
    from memoryd.local.up import apply_migrations
    from shared.settings.env import PgConfig, load

    async def go() -> int:
        cfg = load(PgConfig, "MEMORYD_PG_", os.environ, {"dsn": dsn})
        applied = await apply_migrations(cfg.dsn)
        print(f"applied {len(applied)} migration(s): {', '.join(applied) or 'none pending'}")
        return 0

    return run(go())


@click.command("schemas", context_settings=CONTEXT_SETTINGS)
@click.option("--out", default="deploy/schemas", show_default=True, metavar="DIR")
def schemas(out: str) -> int:
    """Export the JSON Schemas of every wire message."""
    from memoryd.codec import export_json_schemas

    written = export_json_schemas(Path(out))
    print(f"wrote {len(written)} schemas to {out}")
    return 0


COMMANDS = (up, serve, migrate, schemas)
