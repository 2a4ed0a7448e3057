"""Which extracted facts fit the owner's quota (``maxMemories``, ``maxMemoryBytes``).

Chat turns and API writes are bounded by the same quota in ingest; here the facts an
extract job would write are admitted in order while they fit: a fact with a new key adds
one memory and its bytes, a fact that changes an existing key adds only its growth (one
that does not grow is always admitted). A refused fact is not written (the memory it would
update keeps its value); the job still completes, so the event, its stored turns and the
run record stay. 0 means no quota. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Holding:
    """What the owner holds now: memories, content bytes, and the bytes of the facts' existing keys."""

    count: int
    size: int
    existing: Mapping[str, int]


def admit(
    facts: Sequence[tuple[str, int]], holding: Holding, *, max_memories: int, max_bytes: int
) -> tuple[set[int], set[int]]:
    """Indexes of ``facts`` (``(key, content bytes)``) admitted and refused, in order."""
    count, size = holding.count, holding.size
    sizes = dict(holding.existing)
    admitted: set[int] = set()
    refused: set[int] = set()
    for i, (key, nbytes) in enumerate(facts):
        old = sizes.get(key)
        adding = 0 if old is not None else 1
        growth = nbytes - (old or 0)
        over_count = max_memories > 0 and adding and count + adding > max_memories
        over_bytes = max_bytes > 0 and growth > 0 and size + growth > max_bytes
        if over_count or over_bytes:
            refused.add(i)
            continue
        admitted.add(i)
        count, size, sizes[key] = count + adding, size + growth, nbytes
    return admitted, refused
