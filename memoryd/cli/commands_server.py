"""Server-side commands: ``up``, ``serve``, ``migrate``, ``schemas``."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

from shared.errors import ConfigError
from shared.settings.env import PgConfig, load

SERVICES = ("ingest", "extract", "embed", "retrieve", "sleep")


def _data_dir(value: str | None) -> Path:
    return Path(value or os.environ.get("MEMORYD_DATA_DIR") or ".memoryd")


def cmd_up(args: argparse.Namespace) -> int:
    from memoryd.local.up import UpOptions, run_up

    opts = UpOptions(
        data_dir=_data_dir(args.data_dir),
        nats_port=args.nats_port,
        pg_port=args.pg_port,
        embed_processes=args.embed_processes,
        auth=not args.no_auth,
    )
    return asyncio.run(run_up(opts))


def cmd_serve(args: argparse.Namespace) -> int:
    if args.metrics_port is not None:
        os.environ["MEMORYD_METRICS_PORT"] = str(args.metrics_port)
    argv = [sys.executable, "-m", f"services.{args.service}"]
    if args.processes == 1:
        os.execv(sys.executable, argv)
    return asyncio.run(_serve_many(args.service, args.processes, args.metrics_port))


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


async def cmd_migrate(args: argparse.Namespace) -> int:
    from memoryd.local.up import apply_migrations

    cfg = load(PgConfig, "MEMORYD_PG_", os.environ, {"dsn": args.dsn})
    applied = await apply_migrations(cfg.dsn)
    print(f"applied {len(applied)} migration(s): {', '.join(applied) or 'none pending'}")
    return 0


def cmd_schemas(args: argparse.Namespace) -> int:
    from shared.codec import export_json_schemas

    written = export_json_schemas(Path(args.out))
    print(f"wrote {len(written)} schemas to {args.out}")
    return 0


def _positive(value: str) -> int:
    n = int(value)
    if n < 1:
        raise argparse.ArgumentTypeError("must be >= 1")
    return n


def _port(value: str) -> int:
    n = int(value)
    if not 0 <= n <= 65535:
        raise ConfigError("port", f"{n} is not a TCP port (0..65535)")
    return n


def register(sub: argparse._SubParsersAction) -> None:
    up = sub.add_parser("up", help="run everything on this machine (embedded NATS + PostgreSQL)")
    up.add_argument("--data-dir", help="where NATS and PostgreSQL keep data (default .memoryd or $MEMORYD_DATA_DIR)")
    up.add_argument("--nats-port", type=_port, default=0, help="0 = a free port")
    up.add_argument("--pg-port", type=_port, default=0, help="0 = a free port")
    up.add_argument("--embed-processes", type=_positive, default=1, help="embed worker processes")
    up.add_argument("--no-auth", action="store_true", help="run the embedded NATS without users (not recommended)")
    up.set_defaults(func=cmd_up)

    serve = sub.add_parser("serve", help="run one service against external NATS/PostgreSQL")
    serve.add_argument("service", choices=SERVICES)
    serve.add_argument("--processes", type=_positive, default=1, help="worker processes (embed scales this way)")
    serve.add_argument("--metrics-port", type=_port, default=None, help="first metrics port (replica i uses +i)")
    serve.set_defaults(func=cmd_serve)

    mig = sub.add_parser("migrate", help="apply pending SQL migrations")
    mig.add_argument("--dsn", help="PostgreSQL DSN (default $MEMORYD_PG_DSN)")
    mig.set_defaults(func=cmd_migrate)

    sch = sub.add_parser("schemas", help="export the JSON Schemas of every wire message")
    sch.add_argument("--out", default="deploy/schemas")
    sch.set_defaults(func=cmd_schemas)
