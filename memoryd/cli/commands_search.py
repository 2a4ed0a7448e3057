"""``memoryd search --owner O [--session S] [--strategy S] [--json] QUERY``: one retrieval over NATS.

NATS is found like the other client commands: ``--nats-url``, else ``$MEMORYD_NATS_URL``,
else ``<data-dir>/runtime.json`` written by ``memoryd up``. Prints the ranked memories
(score, tier, type, date, text) and which tiers served or fell back; ``--json`` prints
the ``RetrieveResult`` as it came over the wire.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from shared.codec import encode
from shared.errors import ConfigError
from shared.schemas.retrieval import RetrieveResult

STRATEGIES = ("exact", "recent", "semantic", "hybrid")


def resolve_nats_url(flag: str | None, data_dir: str | None) -> str:
    """``--nats-url``, ``$MEMORYD_NATS_URL``, or the ``runtime.json`` of a running ``memoryd up``."""
    if flag:
        return flag
    if os.environ.get("MEMORYD_NATS_URL"):
        return os.environ["MEMORYD_NATS_URL"]
    runtime = Path(data_dir or os.environ.get("MEMORYD_DATA_DIR") or ".memoryd") / "runtime.json"
    try:
        url = json.loads(runtime.read_text()).get("nats_url")
    except (OSError, ValueError) as exc:
        raise ConfigError(
            "MEMORYD_NATS_URL", f"not set, and no readable {runtime} (is `memoryd up` running?): {exc}"
        ) from exc
    if not url:
        raise ConfigError("MEMORYD_NATS_URL", f"{runtime} has no nats_url")
    return str(url)


def render(result: RetrieveResult) -> str:
    """The result as a few readable lines."""
    lines: list[str] = []
    if result.disabled_reason:
        lines.append(f"memory disabled: {result.disabled_reason}")
    for rank, m in enumerate(result.memories, 1):
        text = " ".join(m.content.split())
        text = text if len(text) <= 160 else text[:157] + "..."
        lines.append(f"{rank:>3}. {m.score:.4f} {m.tier:<8} {m.memory_type:<10} {m.created_at:%Y-%m-%d %H:%M} {text}")
    if not result.memories and not result.disabled_reason:
        lines.append("no memories found")
    served = ", ".join(f"{t.tier} {t.ms:.1f} ms" for t in result.tiers if t.served) or "none"
    lines.append(
        f"strategy {result.strategy}; {len(result.memories)} result(s), {result.tokens_used} tokens;"
        f" served by {served}" + (f"; service {result.ms:.1f} ms" if result.ms is not None else "")
    )
    for fallback in result.fallbacks:
        reason = next((t.reason for t in result.tiers if fallback.startswith(t.tier + "->") and t.reason), "")
        lines.append(f"fallback {fallback}" + (f" ({reason})" if reason else ""))
    return "\n".join(lines)


async def cmd_search(args: argparse.Namespace) -> int:
    from memoryd.client import MemoryClient
    from shared.observability.logging import configure
    from shared.settings.env import LogConfig

    configure("cli", LogConfig(level="error", format="console"))  # logs to stderr: stdout stays the answer
    client = await MemoryClient.connect(resolve_nats_url(args.nats_url, args.data_dir), timeout=args.timeout)
    try:
        result = await client.retrieve(
            args.owner,
            args.query,
            session_id=args.session,
            strategy=args.strategy,
            limit=args.limit,
            max_tokens=args.max_tokens,
            dry_run=args.dry_run,
        )
    finally:
        await client.close()
    if args.json:
        sys.stdout.write(encode(result).decode() + "\n")
    else:
        print(render(result))
    return 0


def _limit(value: str) -> int:
    n = int(value)
    if not 1 <= n <= 1000:
        raise argparse.ArgumentTypeError("must be 1..1000")
    return n


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("search", help="retrieve an owner's memories for a query (over NATS)")
    p.add_argument("query", metavar="QUERY", help="what to search for ('' lists the newest)")
    p.add_argument("--owner", required=True, help="the API key id whose memories to search")
    p.add_argument("--session", help="only this session's memories (plus global ones)")
    p.add_argument("--strategy", choices=STRATEGIES, help="default: the owner's setting")
    p.add_argument("--limit", type=_limit, default=20)
    p.add_argument("--max-tokens", type=int, default=None, help="token budget (default: the owner's setting)")
    p.add_argument("--dry-run", action="store_true", help="do not mark the results as accessed")
    p.add_argument("--json", action="store_true", help="print the RetrieveResult as JSON")
    p.add_argument("--nats-url", help="default $MEMORYD_NATS_URL, else <data-dir>/runtime.json")
    p.add_argument("--data-dir", help="where `memoryd up` keeps runtime.json (default .memoryd or $MEMORYD_DATA_DIR)")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for the answer")
    p.set_defaults(func=cmd_search)
