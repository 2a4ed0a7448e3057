"""Pure decisions of the embed service: signatures, source resolution, job triage, batching plans.

Nothing here touches NATS, Postgres, ONNX or HTTP: the adapters feed plain values in and act
on what comes out, so every rule (which text a job embeds, when a signature change starts or
completes, how a batch is cut) is unit-testable on its own.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

SourceKind = Literal["local", "remote"]


# --- signatures ----------------------------------------------------------------------------
def signature(source: str, model: str, dim: int, quantization: str | None = None) -> str:
    """The embedding_signature `{source}:{model}:{dim}[:quant]` recorded per vector store."""
    base = f"{source}:{model}:{dim}"
    return f"{base}:{quantization}" if quantization else base


@dataclass(frozen=True)
class SignatureParts:
    source: str
    model: str
    dim: int
    quantization: str | None = None


def parse_signature(sig: str) -> SignatureParts | None:
    """The parts of a signature, or None when it is not one of ours.

    Model names may contain ':' (e.g. Ollama's `nomic-embed-text:latest`), so the dimension
    is found as the last all-digit field that has a source before it.
    """
    parts = sig.split(":")
    if len(parts) < 3 or parts[0] not in ("local", "remote"):
        return None
    for i in range(len(parts) - 1, 1, -1):
        if parts[i].isdigit():
            quant = ":".join(parts[i + 1 :]) or None
            model = ":".join(parts[1:i])
            if not model:
                return None
            return SignatureParts(parts[0], model, int(parts[i]), quant)
    return None


def cache_key(sig: str, text: str) -> str:
    """`{source}:{model}:{dim}[:quant]:{sha256(text)}`: a text's vector under one signature."""
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{sig}:{digest}"


def reindex_msg_id(memory_id: str, content_hash: str, sig: str, current: str | None) -> str:
    """`Nats-Msg-Id` of a reindex job. A repeated `reindex` inside the stream's dedupe window
    queues nothing twice while the memory is unchanged; once its job has run (its current
    signature changed) or its content changed, a new job gets through."""
    state = hashlib.sha256(f"{sig}\n{current or ''}".encode()).hexdigest()[:16]
    return f"reindex:{memory_id}:{content_hash[:16]}:{state}"


# --- source resolution -----------------------------------------------------------------------
@dataclass(frozen=True)
class Resolution:
    kind: SourceKind
    reason: str  # shown in health and engine.status


def resolve_source(requested: str, remote_url: str | None) -> Resolution:
    """`local`, `remote`, or `auto` = remote when a remote URL is configured, else local."""
    if requested == "local":
        return Resolution("local", "source=local")
    if requested == "remote":
        return Resolution("remote", "source=remote")
    if remote_url:
        return Resolution("remote", "source=auto: MEMORYD_EMBED_REMOTE_URL is set")
    return Resolution("local", "source=auto: MEMORYD_EMBED_REMOTE_URL not set")


# --- signature change ----------------------------------------------------------------------
MetaAction = Literal["init", "noop", "start_change", "continue_change", "cancel_change"]


def meta_action(active: str | None, pending: str | None, configured: str, *, memories_embedded: bool) -> MetaAction:
    """What a starting worker does with one store's `memory_vec_meta` row.

    - the configured signature is active: nothing (`noop`); if a change to another signature
      was pending, it is abandoned (`cancel_change`): the configuration was reverted;
    - it is already pending: the backfill goes on (`continue_change`, e.g. after a restart);
    - no signature is active and no memory was ever embedded: it becomes active (`init`);
    - otherwise (another signature active, or a store added to memories embedded before): it
      becomes pending and every memory is marked for reindex, once (`start_change`).
    """
    if active == configured:
        return "noop" if pending in (None, configured) else "cancel_change"
    if pending == configured:
        return "continue_change"
    if active is None and not memories_embedded:
        return "init"
    return "start_change"


# --- jobs ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class MemoryState:
    """What a worker reads of a memory before embedding it."""

    memory_id: str
    owner: str
    content: str
    content_hash: str
    embedding_signature: str | None
    needs_reindex: bool


JobOutcome = Literal["embed", "deleted", "unchanged"]


def triage(row: MemoryState | None, sig: str) -> JobOutcome:
    """What to do for one job, given the memory as it is now (None: deleted or another owner's).

    The job's own content hash does not matter: a job for content since replaced embeds the
    current content (the update's own job then finds it `unchanged`). A memory whose vector of
    this signature matches its current content is `unchanged` (a redelivered, already written
    job is acked without writing again).
    """
    if row is None:
        return "deleted"
    if not row.needs_reindex and row.embedding_signature == sig:
        return "unchanged"
    return "embed"


def unique_by_id(rows: Sequence[MemoryState]) -> list[MemoryState]:
    """The rows to embed, each memory once (two jobs for one memory share one vector)."""
    seen: dict[str, MemoryState] = {}
    for row in rows:
        seen.setdefault(row.memory_id, row)
    return list(seen.values())


def estimated_tokens(text: str, max_tokens: int = 256) -> int:
    """A cheap upper-ish guess of a text's WordPiece count (~4 characters a token in English,
    plus [CLS]/[SEP]), capped at the truncation length. Used only to bound batch memory."""
    return min(max_tokens, len(text) // 4 + 2)


def length_order(texts: Sequence[str]) -> list[int]:
    """Indexes of ``texts`` shortest first (stable; by ``estimated_tokens``): a batch pads every
    text to its longest, so texts of similar length embedded together waste the least."""
    return sorted(range(len(texts)), key=lambda i: estimated_tokens(texts[i]))


def plan_batches(lengths: Sequence[int], max_batch: int, max_padded_tokens: int) -> list[range]:
    """Cut texts, in order, into inference calls of at most `max_batch` texts whose padded size
    (texts x longest) stays within `max_padded_tokens`: a batch pads to its longest text, and
    ONNX Runtime keeps its peak activation memory, so 64 texts of 256 tokens would hold ~2 GB.
    A single text always makes a call of its own, whatever its length."""
    if max_batch < 1 or max_padded_tokens < 1:
        raise ValueError("max_batch and max_padded_tokens must be >= 1")
    out: list[range] = []
    start, longest = 0, 0
    for i, n in enumerate(lengths):
        longest_with = max(longest, n)
        size = i - start + 1
        if i > start and (size > max_batch or size * longest_with > max_padded_tokens):
            out.append(range(start, i))
            start, longest_with = i, n
        longest = longest_with
    if start < len(lengths):
        out.append(range(start, len(lengths)))
    return out


def chunks(n: int, size: int) -> list[range]:
    """Index ranges cutting `n` items into inference calls of at most `size`."""
    if size < 1:
        raise ValueError(f"chunk size must be >= 1, got {size}")
    return [range(i, min(n, i + size)) for i in range(0, n, size)]
