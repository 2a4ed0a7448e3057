"""``python -m services.gateway.stdio`` (started by ``memoryd mcp``): the MCP tools over stdio.

One owner (``--owner``) for the whole process: an MCP host starts it for its user. NATS comes
from ``--credentials FILE``, else ``$MEMORYD_NATS_CREDENTIALS`` / ``$MEMORYD_NATS_URL``, else
``memoryd up``'s ``client.json`` (``memoryd/credentials.py``); a password never comes from argv,
where every user of the machine can read it. With an owner-bound user NATS itself refuses any
other owner, and every tool names the refusal as ``forbidden``. Logs go to stderr; stdout
carries only MCP messages. A request nested too deep to parse gets its error (``stdio_lines``).
"""

from __future__ import annotations

import argparse
import asyncio
import io
import sys
from collections.abc import Sequence
from typing import Any

import anyio
import msgspec
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server

from memoryd.access import Access, PermissionWatch
from memoryd.connect import NatsEndpoint, connect
from memoryd.credentials import ClientCredentials, resolve, split_url
from memoryd.errors import ConfigError
from memoryd.rpc import call
from memoryd.schemas.base import Owner
from shared.observability.logging import configure
from shared.settings.env import LogConfig

from .handlers.mcp import build_mcp
from .stdio_lines import Lines


def credentials(nats_url: str | None, credentials_file: str | None) -> ClientCredentials:
    """Who the process is on NATS; ``ConfigError`` for a password on the command line."""
    if nats_url and split_url(nats_url)[2]:
        raise ConfigError(
            "--nats-url",
            "a password on the command line is visible in the process list: "
            "set MEMORYD_NATS_URL or MEMORYD_NATS_CREDENTIALS instead",
        )
    return resolve(nats_url, credentials=credentials_file)


async def run(owner: str, creds: ClientCredentials) -> None:
    watch = PermissionWatch()
    nc = await connect(
        NatsEndpoint(url=creds.url, user=creds.user, password=creds.password),
        "memoryd-mcp",
        on_error=watch.on_error,
        inbox_prefix=creds.reply_prefix(),
    )
    access = Access(creds.role, creds.owners, creds.user, watch)

    async def rpc(op: str, request: Any) -> Any:
        async def send(subject: str) -> Any:
            return await call(nc, op, request, subject=subject)

        return await access.send(op, owner, send)

    async def owner_of(ctx: Any) -> str:
        return owner

    try:
        await _serve_stdio(build_mcp(rpc, owner_of))
    finally:
        await nc.drain()


async def _serve_stdio(mcp: MCPServer) -> None:
    """``run_stdio_async``, with the lines too deep to parse answered (``stdio_lines``)."""
    lines = Lines(anyio.wrap_file(io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")))
    async with stdio_server(stdin=lines) as (read, write):  # type: ignore[arg-type]
        lines.answer = write.send
        server = mcp._lowlevel_server
        await server.run(read, write, server.create_initialization_options())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m services.gateway.stdio")
    parser.add_argument("--owner", required=True)
    parser.add_argument("--nats-url", help="a URL without a password (use MEMORYD_NATS_URL for one with it)")
    parser.add_argument("--credentials", help="a credentials file (memoryd/credentials.py)")
    args = parser.parse_args(argv)
    configure("mcp", LogConfig(level="warning", format="json"))
    try:
        msgspec.convert(args.owner, Owner)
    except msgspec.ValidationError:
        print(f"memoryd mcp: configuration error: --owner: {args.owner!r} is not an owner", file=sys.stderr)
        return 2
    try:
        creds = credentials(args.nats_url, args.credentials)
        if creds.owners is not None and args.owner not in creds.owners:
            print(
                f"memoryd mcp: NATS user {creds.user} may act only for {', '.join(creds.owners)}: "
                f"every tool will answer forbidden for {args.owner!r}",
                file=sys.stderr,
            )
        asyncio.run(run(args.owner, creds))
    except ConfigError as exc:
        print(f"memoryd mcp: configuration error: {exc.description}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
