"""``memoryd keys create|list|revoke`` (gateway API keys) and ``memoryd mcp`` (MCP over stdio).

Keys live hashed in the NATS KV bucket ``MEM_API_KEYS`` (``shared/api_keys.py``); these commands
reach it with the operator's NATS URL (``--nats-url``, ``$MEMORYD_NATS_URL``, else
``<data-dir>/runtime.json`` of a running ``memoryd up``). ``create`` prints the key once, on
stdout; only its hash is stored, with the key's limits (``--max-tokens-per-day`` ...).
``memoryd mcp --owner O`` runs the MCP tools over stdio for one owner (an MCP host starts it) as
a NATS user bound to that owner (made on ``memoryd up`` the first time); its credentials reach
the process through the environment or a file, never its argv.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from memoryd.cli.common import CONTEXT_SETTINGS, data_dir, nats_options, quiet_logs, resolve_nats_url, run
from memoryd.errors import ConfigError

if TYPE_CHECKING:
    from shared.api_keys import KeyStore, Role


async def _store(nats_url: str | None, data_dir_flag: str | None) -> tuple[KeyStore, Any]:
    from memoryd.connect import NatsEndpoint, connect
    from shared.api_keys import KeyStore, open_bucket

    quiet_logs()
    url = resolve_nats_url(nats_url, data_dir_flag)
    nc = await connect(NatsEndpoint(url=url), "memoryd-keys", reconnect_forever=False)
    return KeyStore(await open_bucket(nc.jetstream())), nc


@click.group("keys", context_settings=CONTEXT_SETTINGS)
def keys() -> None:
    """Gateway API keys: create, list, revoke.

    Keys are stored hashed in NATS (bucket MEM_API_KEYS) and shown once.
    """


@keys.command("create", context_settings=CONTEXT_SETTINGS)
@click.option("--owner", metavar="OWNER", help="the owner (user or tenant) the key acts for")
@click.option("--operator", is_flag=True, help="an operator key: any owner, settings, admin")
@click.option("--name", default="", help="a label shown by `keys list`")
@click.option("--upstream", metavar="URL", help="the chat proxy's upstream base URL for this key")
@click.option(
    "--max-tokens-per-day", type=click.IntRange(min=0), help="LLM tokens per UTC day via the proxy; 0 = no limit"
)
@click.option("--requests-per-minute", type=click.IntRange(min=0), help="proxied chat calls per minute; 0 = no limit")
@click.option("--max-streams", type=click.IntRange(min=0), help="streamed proxy answers open at once; 0 = no limit")
@click.option("--models", metavar="A,B", help="the only models the proxy forwards for this key")
@click.option("--events-per-second", type=click.IntRange(min=0), help="chat events per second via POST /v1/events")
@nats_options
def create(
    owner: str | None,
    operator: bool,
    name: str,
    upstream: str | None,
    max_tokens_per_day: int | None,
    requests_per_minute: int | None,
    max_streams: int | None,
    models: str | None,
    events_per_second: int | None,
    nats_url: str | None,
    data_dir: str | None,
) -> int:
    """Create a key (printed once).

    An owner key acts only for --owner; an operator key (--operator) for any owner. A limit not
    given takes the gateway's default (MEMORYD_GATEWAY_KEY_*); 0 means no limit.
    """
    if not operator and not owner:
        raise ConfigError("--owner", "give the owner this key acts for, or --operator")
    from shared.api_keys import key_limits, new_key

    role: Role = "operator" if operator else "owner"
    limits = key_limits(
        max_tokens_per_day=max_tokens_per_day,
        requests_per_minute=requests_per_minute,
        max_streams=max_streams,
        models=models,
        events_per_second=events_per_second,
    )
    token, record = new_key(role, owner, name=name, upstream_url=upstream, limits=limits)

    async def go() -> int:
        store, nc = await _store(nats_url, data_dir)
        try:
            await store.put(record)
        finally:
            await nc.drain()
        return 0

    run(go())
    print(token)
    who = "operator (any owner)" if operator else f"owner {owner}"
    print(f"key {record.id} for {who} created; it is shown only now", file=sys.stderr)
    return 0


@keys.command("list", context_settings=CONTEXT_SETTINGS)
@click.option("--json", "as_json", is_flag=True, help="print the keys as JSON")
@nats_options
def list_keys(as_json: bool, nats_url: str | None, data_dir: str | None) -> int:
    """List the keys (never their secrets).

    One tab-separated line per key: id, role, owner, created, name, limits (the ones the key sets).
    """

    async def go() -> int:
        store, nc = await _store(nats_url, data_dir)
        try:
            records = await store.list()
        finally:
            await nc.drain()
        if as_json:
            print(json.dumps([r.public() for r in records], indent=2))
            return 0
        for r in records:
            limits = " ".join(f"{k}={_shown(v)}" for k, v in r.limits.public().items())
            print(f"{r.id}\t{r.role}\t{r.owner or '*'}\t{r.created_at:%Y-%m-%d %H:%M}\t{r.name}\t{limits}")
        return 0

    return run(go())


def _shown(value: object) -> str:
    return ",".join(map(str, value)) if isinstance(value, list) else str(value)


@keys.command("revoke", context_settings=CONTEXT_SETTINGS)
@click.argument("key_id", metavar="ID")
@nats_options
def revoke(key_id: str, nats_url: str | None, data_dir: str | None) -> int:
    """Revoke a key by its id.

    The gateway stops accepting it within its key cache time (5 s by default).
    """

    async def go() -> int:
        store, nc = await _store(nats_url, data_dir)
        try:
            record = await store.revoke(key_id)
        finally:
            await nc.drain()
        print(f"key {record.id} ({record.role} {record.owner or '*'}) revoked", file=sys.stderr)
        return 0

    return run(go())


def mcp_owner_user(owner: str) -> str:
    """The owner-bound NATS user ``memoryd mcp`` makes for ``owner`` (a valid client name)."""
    return "mcp-" + hashlib.sha256(owner.encode()).hexdigest()[:16]


def ensure_owner_credentials(where: Path, owner: str) -> Path:
    """The credentials file of an owner-bound user for ``owner`` on ``memoryd up`` in ``where``:
    made (and the running nats-server reloaded) the first time, reused after. A ``memoryd up``
    without NATS authorization has no users: then its ``client.json``."""
    from memoryd.cli.commands_credentials import bound_client_file
    from memoryd.credentials import ClientCredentials, client_credentials_file, read_file, split_url, write_file
    from memoryd.local.nats import signal_reload
    from memoryd.local.up import credentials_file, nats_dir, runtime_file, write_nats_auth
    from memoryd.subjects import inbox_prefix
    from shared.nats_auth import Credentials

    user = mcp_owner_user(owner)
    path = bound_client_file(where, user)
    if not credentials_file(where).exists():  # NATS without authorization: nothing to bind a user to
        if client_credentials_file(where).exists():
            return client_credentials_file(where)
        raise ConfigError("--data-dir", f"no credentials in {where} (is `memoryd up` running there?)")
    try:
        url = json.loads(runtime_file(where).read_text())["client_nats_url"]
    except (OSError, KeyError, ValueError) as exc:
        raise ConfigError("--data-dir", f"no running `memoryd up` in {where}: {exc}") from exc
    creds = Credentials.load_or_create(credentials_file(where))
    if path.exists() and creds.bound_owners.get(user) == [owner] and read_file(path).owners == [owner]:
        return path
    try:
        password = creds.add_bound_client(user, [owner])
    except ValueError as exc:
        raise ConfigError("--owner", f"{exc}; pass --credentials of a user that may act for it") from exc
    creds.save(credentials_file(where))
    write_nats_auth(where, creds)
    signal_reload(nats_dir(where))
    bound = ClientCredentials(
        url=split_url(url)[0], user=user, password=password, inbox_prefix=inbox_prefix(user), owners=[owner]
    )
    write_file(path, bound)
    return path


def mcp_environment(
    owner: str, nats_url: str | None, credentials: str | None, data_dir_flag: str | None, env: dict[str, str]
) -> dict[str, str]:
    """The environment of the stdio MCP process: its NATS identity travels there (or in a file
    it names), never in argv. Order: ``--credentials``, ``--nats-url``, ``$MEMORYD_NATS_CREDENTIALS``
    or ``$MEMORYD_NATS_URL``, else an owner-bound user of ``memoryd up`` made for ``owner``."""
    from memoryd.credentials import CREDENTIALS_ENV, URL_ENV

    out = dict(env)
    if credentials:
        out.pop(URL_ENV, None)
        out[CREDENTIALS_ENV] = str(Path(credentials).resolve())
    elif nats_url:
        out.pop(CREDENTIALS_ENV, None)
        out[URL_ENV] = nats_url
    elif not (env.get(CREDENTIALS_ENV) or env.get(URL_ENV)):
        out[CREDENTIALS_ENV] = str(ensure_owner_credentials(data_dir(data_dir_flag), owner).resolve())
    return out


@click.command("mcp", context_settings=CONTEXT_SETTINGS)
@click.option("--owner", required=True, metavar="OWNER", help="the owner whose memory the tools use")
@click.option("--credentials", metavar="FILE", help="a credentials file (default: an owner-bound user made for OWNER)")
@nats_options
def mcp(owner: str, credentials: str | None, nats_url: str | None, data_dir: str | None) -> int:
    """Serve the MCP memory tools over stdio.

    For MCP hosts (Claude Desktop, Cursor, ...): the tools act for --owner, as a NATS user
    bound to that owner unless --credentials, --nats-url or the environment name another.
    """
    env = mcp_environment(owner, nats_url, credentials, data_dir, dict(os.environ))
    argv = [sys.executable, "-m", "services.gateway.stdio", "--owner", owner]
    os.execve(sys.executable, argv, env)
    return 0  # not reached


COMMANDS = (keys, mcp)
