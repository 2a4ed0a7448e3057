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

from shared.digest import text_digest
from shared.turn_context import context_text
from shared.vectors.signature import (
    HALF_TAG,
    VectorQuantization,
    turn_context,
    vector_quantization,
    without_turn_context,
)

SourceKind = Literal["local", "remote"]


# --- signatures ----------------------------------------------------------------------------
def signature(source: str, model: str, dim: int, quantization: str | None = None) -> str:
    """The embedding_signature `{source}:{model}:{dim}[:quant]` of a source's vectors (the stores
    record it with their storage, `shared.vectors.common.stored_signature`: `...:half`)."""
    base = f"{source}:{model}:{dim}"
    return f"{base}:{quantization}" if quantization else base


@dataclass(frozen=True)
class SignatureParts:
    source: str
    model: str
    dim: int
    quantization: str | None = None
    storage: VectorQuantization = "none"  # how pgvector stores them (`:half`)
    turn_context: bool = False  # chat turns embedded with their context (`:turn1`)


def parse_signature(sig: str) -> SignatureParts | None:
    """The parts of a signature, or None when it is not one of ours.

    Model names may contain ':' (e.g. Ollama's `nomic-embed-text:latest`), so the dimension
    is found as the last all-digit field that has a source before it. A trailing `:half` is the
    storage and a `:turn1` before it the turn context, not the model's quantization.
    """
    storage = vector_quantization(sig)
    context = turn_context(sig)
    parts = without_turn_context(sig).removesuffix(f":{HALF_TAG}").split(":")
    if len(parts) < 3 or parts[0] not in ("local", "remote"):
        return None
    for i in range(len(parts) - 1, 1, -1):
        if parts[i].isdigit():
            quant = ":".join(parts[i + 1 :]) or None
            model = ":".join(parts[1:i])
            if not model:
                return None
            return SignatureParts(parts[0], model, int(parts[i]), quant, storage, context)
    return None


def cache_key(sig: str, text: str, owner: str | None = None) -> str:
    """`{source}:{model}:{dim}[:quant]:{sha256(text)}`: a text's vector under one signature."""
    return f"{sig}:{text_digest(text, owner)}"


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


def embed_text(content: str, context: str | None, sig: str) -> str:
    """What a memory is embedded as under ``sig``: with its context head (``memories.context``: a
    raw chat turn's day and speaker, ``shared.turn_context``) when ``sig`` names the turn context,
    the text the keyword side indexes; else (no head, or an older signature) as stored."""
    return context_text(content, context) if turn_context(sig) else content


def same_vectors(a: str, b: str) -> bool:
    """Whether signatures ``a`` and ``b`` name the same vectors, stored differently (``...:half``)."""
    return a.removesuffix(f":{HALF_TAG}") == b.removesuffix(f":{HALF_TAG}")


def searched_too(states: Sequence[MemoryState], fresh: set[str]) -> list[int]:
    """During a signature change, which of a batch's ``states`` (by index) also get a vector of the
    signature retrieval still searches, so memories created or edited meanwhile are found before the
    switch (memory ids in ``fresh``: asked for by a job other than the reindex's, or edited after its
    reindex job was queued). A memory queued by the reindex alone has its old vector already;
    writing it again would double the reindex's work.
    """
    return [i for i, s in enumerate(states) if s.memory_id in fresh]


def unique_by_id(rows: Sequence[MemoryState]) -> list[MemoryState]:
    """The rows to embed, each memory once (two jobs for one memory share one vector)."""
    seen: dict[str, MemoryState] = {}
    for row in rows:
        seen.setdefault(row.memory_id, row)
    return list(seen.values())


def length_order(lengths: Sequence[int]) -> list[int]:
    """Indexes shortest first (stable): a batch pads every text to its longest, so texts of
    similar length embedded together waste the least."""
    return sorted(range(len(lengths)), key=lengths.__getitem__)


#: fixed cost of one inference call, in padded-token equivalents: on one thread the model's
#: cost is linear in padded tokens (texts x longest) plus ~5-10 tokens' worth per call
#: (measured at 16-128 tokens, 1-32 texts), so batching saves little and padding costs a lot.
CALL_OVERHEAD_TOKENS = 8


def plan_batches(
    lengths: Sequence[int], max_batch: int, max_padded_tokens: int, call_overhead: int = CALL_OVERHEAD_TOKENS
) -> list[range]:
    """Cut texts, in order (the caller sorts them shortest first), into inference calls that
    cost the least in all: each call costs `call_overhead` plus its padded tokens (texts x
    longest), has at most `max_batch` texts and at most `max_padded_tokens` padded tokens.

    A batch pads to its longest text, so a 20-token text beside a 200-token one costs ten
    times its own work: texts of similar length share a call, a long one goes alone. The cap
    bounds ONNX Runtime's activation memory (kept for the process's life). A single text
    always makes a call of its own, whatever its length. Dynamic programming over the cut
    points (n <= a few hundred texts per call of this function).
    """
    if max_batch < 1 or max_padded_tokens < 1:
        raise ValueError("max_batch and max_padded_tokens must be >= 1")
    n = len(lengths)
    best = [0] * (n + 1)  # best[j]: least cost of texts [0, j)
    cut = [0] * (n + 1)  # where the last call of that plan starts
    for j in range(1, n + 1):
        best[j] = -1
        longest = 0
        for i in range(j - 1, max(-1, j - 1 - max_batch), -1):  # last call = [i, j), growing leftwards
            longest = max(longest, lengths[i])
            size = j - i
            if size > 1 and size * longest > max_padded_tokens:
                break
            cost = best[i] + call_overhead + size * longest
            if best[j] < 0 or cost < best[j]:  # ties keep the shorter last call: earlier calls fuller
                best[j], cut[j] = cost, i
    out: list[range] = []
    j = n
    while j > 0:
        out.append(range(cut[j], j))
        j = cut[j]
    return out[::-1]


def chunks(n: int, size: int) -> list[range]:
    """Index ranges cutting `n` items into inference calls of at most `size`."""
    if size < 1:
        raise ValueError(f"chunk size must be >= 1, got {size}")
    return [range(i, min(n, i + size)) for i in range(0, n, size)]
