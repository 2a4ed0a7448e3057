"""How a signature names the storage of its vectors (a trailing ``:half``) and the text chat turns
were embedded as (``:turn1``, ``shared.turn_context``).

An embedding signature ``{source}:{model}:{dim}[:quant][:turn1][:half]`` says which vectors a
store holds; the pgvector storage (``vectorQuantization``) and the turn context format are part
of it, so a change of either is a signature change (new vectors beside the old, search switching
when the backfill completes). Pure: used by the settings, the stores and the embed service alike.
"""

from __future__ import annotations

from typing import Literal

from shared.turn_context import TURN_CONTEXT_TAG

#: how pgvector stores vectors: `none` full precision (`vector`), `half` 2 bytes per dimension (`halfvec`)
VectorQuantization = Literal["none", "half"]
HALF_TAG = "half"


def stored_signature(signature: str, quantization: VectorQuantization) -> str:
    """``signature`` naming its storage: ``...:half`` for halfvec, unchanged for full precision."""
    base = signature.removesuffix(f":{HALF_TAG}")
    return f"{base}:{HALF_TAG}" if quantization == "half" else base


def vector_quantization(signature: str) -> VectorQuantization:
    """How vectors of ``signature`` are stored in pgvector (``stored_signature``'s inverse)."""
    return "half" if signature.endswith(f":{HALF_TAG}") else "none"


def with_turn_context(signature: str) -> str:
    """``signature`` naming vectors whose chat turns embed their context (``...:turn1[:half]``)."""
    if turn_context(signature):
        return signature
    base = signature.removesuffix(f":{HALF_TAG}")
    half = signature[len(base) :]
    return f"{base}:{TURN_CONTEXT_TAG}{half}"


def turn_context(signature: str) -> bool:
    """Whether vectors of ``signature`` embed chat turns with their context (``with_turn_context``)."""
    return signature.removesuffix(f":{HALF_TAG}").endswith(f":{TURN_CONTEXT_TAG}")


def without_turn_context(signature: str) -> str:
    """``signature`` without its turn-context tag (``with_turn_context``'s inverse)."""
    base = signature.removesuffix(f":{HALF_TAG}")
    half = signature[len(base) :]
    return base.removesuffix(f":{TURN_CONTEXT_TAG}") + half
