"""``memoryd entities list|relations --owner O``: the entity graph consolidation builds (over NATS).

``list`` shows the owner's entities (most mentioned first; ``--entity ID``: it and its
neighbours); ``relations`` shows the edges between them, affective ones with their emotion
and whether they are an occasion or a trait. ``--json`` prints the result as JSON.
"""

from __future__ import annotations

from typing import Any

import click

from memoryd.cli.common import (
    CONTEXT_SETTINGS,
    cells,
    client_options,
    owner_option,
    print_json,
    print_table,
    table,
    with_client,
)
from memoryd.client import MemoryClient
from memoryd.schemas.graph import RelationRecord

_PAGE = (
    click.option("--limit", type=click.IntRange(1, 1000), default=100, show_default=True, metavar="N"),
    click.option("--offset", type=click.IntRange(0, 1_000_000), default=0, show_default=True, metavar="N"),
)


def _paged(f: Any) -> Any:
    for decorate in reversed(_PAGE):
        f = decorate(f)
    return f


def _footer(shown: int, offset: int, total: int, what: str) -> str:
    if not shown:
        return f"no {what}" if not offset else f"no {what} at offset {offset} ({total} in all)"
    return f"{what} {offset + 1}-{offset + shown} of {total}"


def relation_label(r: RelationRecord) -> str:
    """``affective_context (joy, trait)`` for emotion edges, else the relation."""
    if r.emotion is None and r.affect is None:
        return r.relation
    return f"{r.relation} ({', '.join(x for x in (r.emotion, r.affect) if x)})"


@click.group("entities", context_settings=CONTEXT_SETTINGS)
def entities() -> None:
    """The entity graph sleep builds: entities, relations."""


@entities.command("list", context_settings=CONTEXT_SETTINGS)
@owner_option()
@click.option("--entity", "entity_id", metavar="ID", help="only this entity and its neighbours")
@click.option("-q", "--query", "q", metavar="TEXT", help="name contains TEXT")
@click.option("--kind", metavar="KIND", help="only entities of this kind (person, thing, ...)")
@_paged
@client_options
@with_client
async def list_entities(client: MemoryClient, *, owner: str, as_json: bool, **o: Any) -> int:
    """The owner's entities, most mentioned first."""
    result = await client.entities(
        owner, entity_id=o["entity_id"], q=o["q"], kind=o["kind"], limit=o["limit"], offset=o["offset"]
    )
    if as_json:
        print_json(result)
        return 0
    rows = table("id", "name", "kind", "mentions", "relations", justify_right=("mentions", "relations"))
    for e in result.entities:
        rows.add_row(*cells(e.id, e.name, e.kind, e.mentions, e.degree))
    if result.entities:
        print_table(rows)
    print(_footer(len(result.entities), o["offset"], result.total, "entities"))
    return 0


@entities.command("relations", context_settings=CONTEXT_SETTINGS)
@owner_option()
@click.option("--entity", "entity_id", metavar="ID", help="only edges touching this entity")
@click.option("--relation", metavar="NAME", help="only this relation (related_to, affective_context, ...)")
@_paged
@client_options
@with_client
async def list_relations(client: MemoryClient, *, owner: str, as_json: bool, **o: Any) -> int:
    """The owner's entity relations, newest first."""
    result = await client.relations(
        owner, entity_id=o["entity_id"], relation=o["relation"], limit=o["limit"], offset=o["offset"]
    )
    if as_json:
        print_json(result)
        return 0
    rows = table("source", "relation", "target", "evidence", justify_right=("evidence",))
    for r in result.relations:
        rows.add_row(*cells(r.source_name, relation_label(r), r.target_name, len(r.evidence) or r.weight or ""))
    if result.relations:
        print_table(rows)
    print(_footer(len(result.relations), o["offset"], result.total, "relations"))
    return 0


COMMANDS = (entities,)
