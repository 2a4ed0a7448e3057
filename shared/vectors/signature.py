"""How a signature names the storage of its vectors: a trailing ``:half``.

An embedding signature ``{source}:{model}:{dim}[:quant]`` says which vectors a store holds; the
pgvector storage (``vectorQuantization``) is part of it, so a change of storage is a signature
change (new vectors beside the old, search switching when the backfill completes). Pure: used by
the settings, the stores and the embed service's signature logic alike.
"""

from __future__ import annotations

from typing import Literal

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
