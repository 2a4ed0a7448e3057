"""``memoryd search --owner O QUERY`` (one retrieval) and ``memoryd inject --owner O TEXT``
(a user message with the owner's memory put into the conversation), over NATS.

``search`` prints the ranked memories as a table (rank, score, tier, type, date, text), then
which tiers served or fell back; ``inject`` prints where the memory went and the messages as
they would go to the LLM. ``--json`` prints the result as it came over the wire.
"""

from __future__ import annotations

from typing import Any

import click

from memoryd.cli.common import (
    CONTEXT_SETTINGS,
    cells,
    json_option,
    nats_options,
    one_line,
    print_table,
    print_wire,
    table,
    timeout_option,
    with_client,
)
from memoryd.client import MemoryClient
from memoryd.schemas.retrieval import RetrieveResult

STRATEGIES = ("exact", "recent", "semantic", "hybrid")


def render(result: RetrieveResult) -> None:
    """The ranked memories as a table, then a line on how the result was served."""
    if result.disabled_reason:
        print(f"memory disabled: {result.disabled_reason}")
    if result.memories:
        rows = table("#", "score", "tier", "type", "created", "memory", justify_right=("#", "score"))
        for rank, m in enumerate(result.memories, 1):
            rows.add_row(
                *cells(rank, f"{m.score:.4f}", m.tier, m.memory_type, f"{m.created_at:%Y-%m-%d %H:%M}")
                + cells(one_line(m.content, 160))
            )
        print_table(rows)
    elif not result.disabled_reason:
        print("no memories found")
    served = ", ".join(f"{t.tier} {t.ms:.1f} ms" for t in result.tiers if t.served) or "none"
    print(
        f"strategy {result.strategy}; {len(result.memories)} result(s), {result.tokens_used} tokens;"
        f" served by {served}" + (f"; service {result.ms:.1f} ms" if result.ms is not None else "")
    )
    for fallback in result.fallbacks:
        reason = next((t.reason for t in result.tiers if fallback.startswith(t.tier + "->") and t.reason), "")
        print(f"fallback {fallback}" + (f" ({reason})" if reason else ""))


@click.command("search", context_settings=CONTEXT_SETTINGS)
@click.argument("query", metavar="QUERY")
@click.option("--owner", required=True, metavar="OWNER", help="the owner (user or tenant) whose memories to search")
@click.option("--session", metavar="ID", help="only this session's memories (plus global ones)")
@click.option("--agent", metavar="ID", help="only this agent's memories (plus global ones)")
@click.option("--strategy", type=click.Choice(STRATEGIES), help="default: the owner's setting")
@click.option("--limit", type=click.IntRange(1, 1000), default=20, show_default=True)
@click.option("--max-tokens", type=int, default=None, help="token budget (default: the owner's setting)")
@click.option("--dry-run", is_flag=True, help="do not mark the results as accessed")
@json_option("print the RetrieveResult as JSON")
@timeout_option(help_text="seconds to wait for the answer")
@nats_options
@with_client
async def search(client: MemoryClient, *, owner: str, query: str, as_json: bool, **o: Any) -> int:
    """Retrieve an owner's memories for QUERY.

    An empty QUERY ('') lists the newest memories.
    """
    result = await client.retrieve(
        owner,
        query,
        session_id=o["session"],
        agent_id=o["agent"],
        strategy=o["strategy"],
        limit=o["limit"],
        max_tokens=o["max_tokens"],
        dry_run=o["dry_run"],
    )
    if as_json:
        print_wire(result)
    else:
        render(result)
    return 0


@click.command("inject", context_settings=CONTEXT_SETTINGS)
@click.argument("text")
@click.option("--owner", required=True, metavar="OWNER", help="the owner (user or tenant) whose memory to inject")
@click.option("--system", metavar="TEXT", help="a system message before TEXT")
@click.option("--session", metavar="ID", help="the conversation's session id")
@click.option("--agent", metavar="ID", help="only this agent's memories (plus global ones)")
@click.option("--strategy", type=click.Choice(STRATEGIES), help="default: the owner's setting")
@click.option("--max-tokens", type=int, default=None, help="token budget (default: the owner's setting)")
@click.option("--provider", help="LLM provider the messages go to")
@click.option("--model", help="LLM model the messages go to")
@json_option("print the InjectResult as JSON")
@timeout_option(help_text="seconds to wait for the answer")
@nats_options
@with_client
async def inject(client: MemoryClient, *, owner: str, text: str, system: str | None, as_json: bool, **o: Any) -> int:
    """Show a user message with the owner's memory injected.

    What an application sends its LLM instead of the bare conversation.
    """
    messages = [*([{"role": "system", "content": system}] if system else []), {"role": "user", "content": text}]
    result = await client.inject(
        owner,
        messages,
        session_id=o["session"],
        agent_id=o["agent"],
        strategy=o["strategy"],
        max_tokens=o["max_tokens"],
        provider=o["provider"],
        model=o["model"],
    )
    if as_json:
        print_wire(result)
        return 0
    print(f"{len(result.injected)} memories injected into the {result.placement} message")
    rows = table("role", "content")
    for message in result.messages:
        rows.add_row(*cells(message.role, message.content))
    print_table(rows)
    return 0


COMMANDS = (search, inject)
