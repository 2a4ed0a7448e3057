"""``memoryd up``: embedded NATS + embedded PostgreSQL + all six services (the gateway among them) on one machine.

Each service is its own child process (``python -m services.<name>``), as on many machines, so
a crashed one restarts alone. NATS listens on 4222 unless ``--nats-port`` says otherwise (a port
in use is an error, never another port). ``<data-dir>`` holds ``client.json`` (0600, what
``MemoryClient.connect()`` reads), ``runtime.json`` (operator URLs for the CLI), ``secrets.key``
(0600, seals the settings' API keys unless ``MEMORYD_SECRETS_KEY(_FILE)`` gives one) and
``prometheus-targets.json`` (``memoryd.local.scrape``). Each start step goes to stderr with its
time (``steps.py``), then one ``memoryd ready nats=... credentials=... postgres=... gateway=...
metrics=...`` line once every service answers. SIGINT/SIGTERM stops the services, then NATS,
then PostgreSQL; the data stays. ``MEMORYD_NATS_URL`` /
``MEMORYD_PG_DSN`` use external servers instead of the embedded ones.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import asyncpg
import nats

from memoryd.credentials import ClientCredentials, client_credentials_file, write_file
from memoryd.errors import ConfigError
from memoryd.local.model import cache_dir as model_cache_dir
from memoryd.local.nats import EmbeddedNats
from memoryd.local.postgres import EmbeddedPostgres
from memoryd.local.scrape import metrics_ports, write_targets
from memoryd.local.steps import Steps
from memoryd.local.supervisor import Child, Supervisor, child_env
from memoryd.redact import redact_text
from memoryd.subjects import CLIENT_ROLE, OPERATOR_ROLE, inbox_prefix
from shared.db.migrate import migrate
from shared.nats_auth import Credentials, render_authorization
from shared.secrets import KEY_ENV, KEY_FILE_ENV, generate_key
from shared.service_names import SERVICES

DATABASE = "memoryd"
#: The NATS port of ``memoryd up`` unless ``--nats-port`` says otherwise (NATS's own default).
DEFAULT_NATS_PORT = 4222


@dataclass
class UpOptions:
    data_dir: Path
    nats_port: int = DEFAULT_NATS_PORT  # 0: a free port (tests)
    pg_port: int = 0
    metrics_port: int = 0  # base port: child i serves on base + i; 0 = free ports
    embed_processes: int = 1
    auth: bool = True  # per-service NATS users (embedded NATS only)
    gateway_port: int = 8420  # the HTTP gateway (REST, chat proxy, MCP); 0 = a free port
    gateway_host: str = "127.0.0.1"
    services: tuple[str, ...] = SERVICES
    extra_env: dict[str, str] = field(default_factory=dict)


def runtime_file(data_dir: Path) -> Path:
    return data_dir / "runtime.json"


async def ensure_database(admin_dsn: str, name: str) -> None:
    conn = await asyncpg.connect(admin_dsn)
    try:
        exists = await conn.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", name)
        if not exists:
            with contextlib.suppress(asyncpg.DuplicateDatabaseError):
                await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()


async def apply_migrations(dsn: str) -> list[str]:
    try:
        conn = await asyncpg.connect(dsn, timeout=10)
    except (OSError, asyncpg.PostgresError) as exc:
        raise ConfigError("MEMORYD_PG_DSN", f"cannot connect to PostgreSQL: {exc}") from exc
    try:
        return await migrate(conn)
    finally:
        await conn.close()


async def wait_for_discovery(nats_url: str, expected: set[str], timeout: float = 20.0) -> None:
    """Wait until every expected micro service answers ``$SRV.PING``."""
    nc = await nats.connect(nats_url)
    try:
        deadline = asyncio.get_running_loop().time() + timeout
        seen: set[str] = set()
        while asyncio.get_running_loop().time() < deadline:
            inbox = nc.new_inbox()
            sub = await nc.subscribe(inbox)
            await nc.publish("$SRV.PING", b"", reply=inbox)
            with contextlib.suppress(Exception):
                while True:
                    msg = await sub.next_msg(timeout=0.3)
                    seen.add(json.loads(msg.data)["name"])
            await sub.unsubscribe()
            if expected <= seen:
                return
        raise RuntimeError(f"services missing from $SRV.PING: {sorted(expected - seen)}")
    finally:
        await nc.close()


def with_user(url: str, user: str, creds: Credentials | None) -> str:
    """``nats://user:password@host:port`` when auth is on, else ``url`` unchanged."""
    if creds is None:
        return url
    scheme, _, rest = url.partition("://")
    return f"{scheme}://{user}:{quote(creds.passwords[user], safe='')}@{rest}"


def secrets_key_file(data_dir: Path) -> Path:
    return data_dir / "secrets.key"


def ensure_secrets_key(data_dir: Path) -> Path:
    """``<data-dir>/secrets.key`` (0600), made once: the key that seals API keys in the settings table."""
    path = secrets_key_file(data_dir)
    if not path.exists():
        write_private(path, generate_key() + "\n")
    return path


def pg_password(data_dir: Path) -> str:
    """The embedded PostgreSQL's password, ``<data-dir>/pg-password`` (0600), made once."""
    path = data_dir / "pg-password"
    if not path.exists():
        write_private(path, secrets.token_hex(24) + "\n")
    return path.read_text().strip()


def credentials_file(data_dir: Path) -> Path:
    return data_dir / "credentials.json"


def application_credentials(nats_url: str, creds: Credentials | None) -> ClientCredentials:
    """What an application connects with: the ``client`` user (application role)."""
    if creds is None:
        return ClientCredentials(url=nats_url, role="application")
    return ClientCredentials(
        url=nats_url,
        user=CLIENT_ROLE,
        password=creds.passwords[CLIENT_ROLE],
        inbox_prefix=inbox_prefix(CLIENT_ROLE),
        role="application",
    )


def nats_dir(data_dir: Path) -> Path:
    return data_dir / "nats"


def write_nats_auth(data_dir: Path, creds: Credentials) -> str:
    """Write the users and permissions to ``nats/auth.conf`` (0600); the line that includes it.

    A separate file so ``memoryd credentials`` can rewrite it and reload a running server."""
    nats_dir(data_dir).mkdir(parents=True, exist_ok=True)
    write_private(nats_dir(data_dir) / "auth.conf", render_authorization(creds))
    return 'include "auth.conf"'


def write_private(path: Path, text: str) -> None:
    """Write a file only its owner can read (it holds credentials)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.chmod(path, 0o600)


async def prepare_model(cache: Path) -> str:
    """Build the embedding model's prepared file once (``memoryd.local.model``, a child process)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "memoryd.local.model",
        str(cache),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    if proc.returncode != 0:
        raise ConfigError("MEMORYD_EMBED_MODEL_CACHE_DIR", f"preparing the model failed: {err.decode()[-2000:]}")
    lines = [line for line in out.decode().splitlines() if line.strip()]
    return lines[-1] if lines else ""


async def run_up(opts: UpOptions) -> int:
    data_dir = opts.data_dir.resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / "logs").mkdir(exist_ok=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)

    nats_srv: EmbeddedNats | None = None
    pg_srv: EmbeddedPostgres | None = None
    supervisor: Supervisor | None = None
    steps = Steps()
    try:
        nats_url = os.environ.get("MEMORYD_NATS_URL") or ""
        creds: Credentials | None = None
        if not nats_url:
            creds = Credentials.load_or_create(credentials_file(data_dir)) if opts.auth else None
            auth_conf = write_nats_auth(data_dir, creds) if creds else ""
            nats_srv = EmbeddedNats(nats_dir(data_dir), port=opts.nats_port, extra_config=auth_conf)
            with steps.step("nats", f"nats-server to listen on port {opts.nats_port or 'any'}") as note:
                nats_url = nats_srv.start()  # main thread: see embedded.process.spawn
                note["detail"] = nats_url
        operator_url = with_user(nats_url, OPERATOR_ROLE, creds)
        pg_dsn = os.environ.get("MEMORYD_PG_DSN") or ""
        if not pg_dsn:
            pg_srv = EmbeddedPostgres(data_dir / "pg", port=opts.pg_port, password=pg_password(data_dir))
            fresh = not (pg_srv.pgdata / "PG_VERSION").exists()
            with steps.step("initdb", f"initdb to create the cluster in {pg_srv.pgdata}") as note:
                pg_srv.init()
                note["detail"] = "new cluster" if fresh else "cluster exists"
            with steps.step("postgres", "PostgreSQL to accept connections (crash recovery after a kill)") as note:
                admin = pg_srv.start()
                await ensure_database(admin, DATABASE)
                pg_dsn = pg_srv.dsn(DATABASE)
                note["detail"] = f"port {pg_srv.port}"
        with steps.step("migrations", "PostgreSQL to apply the SQL migrations") as note:
            applied = await apply_migrations(pg_dsn)
            note["detail"] = f"{len(applied)} applied" if applied else "up to date"
        pg_shown = pg_srv.dsn(DATABASE, with_password=False) if pg_srv else redact_text(pg_dsn)

        env = child_env({"MEMORYD_NATS_URL": nats_url, "MEMORYD_PG_DSN": pg_dsn, **opts.extra_env})
        env.setdefault("MEMORYD_DATA_DIR", str(data_dir))
        if not (env.get(KEY_ENV) or env.get(KEY_FILE_ENV)):
            env[KEY_FILE_ENV] = str(ensure_secrets_key(data_dir))
        if "embed" in opts.services:
            cache = model_cache_dir(env, data_dir)
            with steps.step("model", f"the embedding model to be prepared once in {cache}") as note:
                note["detail"] = await prepare_model(cache)

        def service_ready(child: Child) -> None:
            steps.say(f"service {child.label} ready in {child.ready_at - child.started_at:.1f} s")

        supervisor = Supervisor(env, on_ready=service_ready)
        children = [(n, i) for n in opts.services for i in range(opts.embed_processes if n == "embed" else 1)]
        host = env.get("MEMORYD_METRICS_HOST") or "127.0.0.1"
        ports = metrics_ports(opts.metrics_port, [f"{n}-{i}" for n, i in children], host)
        for (name, i), port in zip(children, ports, strict=True):
            role_env = {"MEMORYD_NATS_USER": name, "MEMORYD_NATS_PASSWORD": creds.passwords[name]} if creds else {}
            role_env["MEMORYD_METRICS_PORT"] = str(port)
            if name == "gateway":
                role_env |= {"MEMORYD_GATEWAY_PORT": str(opts.gateway_port), "MEMORYD_GATEWAY_HOST": opts.gateway_host}
            supervisor.add(name, i, env=role_env, log_path=data_dir / "logs" / f"{name}-{i}.log")
        starting = supervisor

        def not_ready() -> str:
            late = [c.label for c in starting.children if not c.ready.is_set()]
            return f"{', '.join(late)} (their logs: {data_dir / 'logs'})" if late else "nothing"

        with steps.step("services", not_ready):
            await supervisor.start_all()
        with steps.step("discovery", "every service to answer $SRV.PING"):
            await wait_for_discovery(operator_url, {f"memoryd-{n}" for n in opts.services})
        metrics = ",".join(c.metrics_url for c in supervisor.children)
        gateway = next((c.fields["http"] for c in supervisor.children if "http" in c.fields), "")
        write_targets(data_dir, [(c.name, c.metrics_url) for c in supervisor.children])
        app_creds = client_credentials_file(data_dir)
        write_file(app_creds, application_credentials(nats_url, creds))
        write_private(
            runtime_file(data_dir),
            json.dumps(
                {
                    "nats_url": operator_url,
                    "client_nats_url": with_user(nats_url, CLIENT_ROLE, creds),
                    "pg_dsn": pg_dsn,
                    "metrics": metrics.split(","),
                    "gateway_url": gateway,
                    "pid": os.getpid(),
                }
            ),
        )
        shown = f" gateway={gateway}" if gateway else ""
        print(
            f"memoryd ready nats={nats_url} credentials={app_creds} postgres={pg_shown}{shown} metrics={metrics}",
            flush=True,
        )
        steps.say(f"ready in {steps.total():.1f} s")
        print(
            f"logs: {data_dir / 'logs'}  (Ctrl-C stops everything; data stays in {data_dir})",
            file=sys.stderr,
            flush=True,
        )
        await stop.wait()
        return 0
    finally:
        print("memoryd stopping", file=sys.stderr, flush=True)
        if supervisor is not None:
            await supervisor.stop_all()
        if nats_srv is not None:
            nats_srv.stop()
        if pg_srv is not None:
            pg_srv.stop()
        with contextlib.suppress(FileNotFoundError):
            runtime_file(data_dir).unlink()
        print("memoryd stopped", file=sys.stderr, flush=True)
