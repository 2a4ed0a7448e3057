"""``memoryd keys create|list|revoke`` (gateway API keys) and ``memoryd mcp`` (MCP over stdio).

Keys live hashed in the NATS KV bucket ``MEM_API_KEYS`` (``shared/api_keys.py``); these commands
reach it with the operator's NATS URL (``--nats-url``, ``$MEMORYD_NATS_URL``, else
``<data-dir>/runtime.json`` of a running ``memoryd up``). ``create`` prints the key once, on
stdout; only its hash is stored, with the key's limits (``--max-tokens-per-day`` ...).
``memoryd mcp --owner O`` runs the MCP tools over stdio for one owner (an MCP host starts it),
with the client credentials of ``memoryd up`` (client.json).
"""

from __future__ import annotations

import json
import os
import sys
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


def mcp_args(data_dir_flag: str | None, nats_url: str | None) -> list[str]:
    """How the stdio MCP process reaches NATS: the URL given, else ``memoryd up``'s client.json."""
    from memoryd.credentials import URL_ENV, client_credentials_file

    url = nats_url or os.environ.get(URL_ENV)
    if url:
        return ["--nats-url", url]
    path = client_credentials_file(data_dir(data_dir_flag))
    if not path.exists():
        raise ConfigError("MEMORYD_NATS_URL", f"not set, and no {path} (is `memoryd up` running?)")
    return ["--credentials", str(path.resolve())]


@click.command("mcp", context_settings=CONTEXT_SETTINGS)
@click.option("--owner", required=True, metavar="OWNER", help="the owner whose memory the tools use")
@nats_options
def mcp(owner: str, nats_url: str | None, data_dir: str | None) -> int:
    """Serve the MCP memory tools over stdio.

    For MCP hosts (Claude Desktop, Cursor, ...): the tools act for --owner.
    """
    argv = [sys.executable, "-m", "services.gateway.stdio", "--owner", owner, *mcp_args(data_dir, nats_url)]
    os.execv(sys.executable, argv)
    return 0  # not reached


COMMANDS = (keys, mcp)
