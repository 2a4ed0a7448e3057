"""``python -m services.gateway.stdio`` (started by ``memoryd mcp``): the MCP tools over stdio.

One owner (``--owner``) for the whole process: an MCP host starts it for its user. NATS comes
from ``--nats-url`` or ``--credentials FILE`` (the JSON ``url``/``user``/``password`` file
``memoryd up`` writes as ``client.json``). Logs go to stderr; stdout carries only MCP messages.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from memoryd.connect import connect
from memoryd.errors import ConfigError
from memoryd.rpc import call
from memoryd.schemas.base import Owner
from shared.observability.logging import configure
from shared.settings.env import LogConfig, NatsConfig

from .handlers.mcp import build_mcp


def nats_config(nats_url: str | None, credentials: str | None) -> NatsConfig:
    if nats_url:
        return NatsConfig(url=nats_url)
    if not credentials:
        raise ConfigError("--nats-url", "give --nats-url or --credentials")
    try:
        raw = json.loads(Path(credentials).read_text())
        return NatsConfig(url=raw["url"], user=raw.get("user"), password=raw.get("password"))
    except (OSError, ValueError, KeyError) as exc:
        raise ConfigError("--credentials", f"cannot read {credentials}: {exc}") from exc


async def run(owner: str, cfg: NatsConfig) -> None:
    nc = await connect(cfg, "memoryd-mcp")

    async def rpc(op: str, request: Any) -> Any:
        return await call(nc, op, request)

    async def owner_of(ctx: Any) -> str:
        return owner

    try:
        await build_mcp(rpc, owner_of).run_stdio_async()
    finally:
        await nc.drain()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m services.gateway.stdio")
    parser.add_argument("--owner", required=True)
    parser.add_argument("--nats-url")
    parser.add_argument("--credentials")
    args = parser.parse_args(argv)
    configure("mcp", LogConfig(level="warning", format="json"))
    try:
        msgspec.convert(args.owner, Owner)
    except msgspec.ValidationError:
        print(f"memoryd mcp: configuration error: --owner: {args.owner!r} is not an owner", file=sys.stderr)
        return 2
    try:
        asyncio.run(run(args.owner, nats_config(args.nats_url, args.credentials)))
    except ConfigError as exc:
        print(f"memoryd mcp: configuration error: {exc.description}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
