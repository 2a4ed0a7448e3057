"""What both vector adapters share: input validation, names derived from a signature, and
exact in-memory kNN pairs.

Signatures (``{source}:{model}:{dim}[:quant]``) come from settings, so they are data: they
are validated here and only ever reach SQL quoted (``sql_literal``) or hashed into names; one
ending in ``:half`` (``signature.stored_signature``) names vectors stored as ``halfvec``.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, get_args

import numpy as np
from numpy.typing import NDArray

from memoryd.errors import ValidationFailed
from memoryd.schemas.base import MemoryScope, MemoryState, MemoryType

from .port import Pair, VectorItem

MAX_DIM = 16_000  # pgvector's limit for the vector type
MAX_SIGNATURE_CHARS = 256
MAX_LIMIT = 1000
HALF_MAX = 65504.0  # the largest finite float16 (halfvec's range)


def check_signature(signature: str) -> str:
    """The signature if usable as data (non-empty, bounded, no NUL), else ``ValidationFailed``."""
    if not signature or len(signature) > MAX_SIGNATURE_CHARS or "\x00" in signature:
        raise ValidationFailed(f"signature: must be 1..{MAX_SIGNATURE_CHARS} characters without NUL")
    return signature


def check_dim(dim: int) -> int:
    if not isinstance(dim, int) or isinstance(dim, bool) or not 1 <= dim <= MAX_DIM:
        raise ValidationFailed(f"dim: must be an integer in 1..{MAX_DIM}, got {dim!r}")
    return dim


def signature_hash(signature: str, n: int = 16) -> str:
    """A short stable hex digest of the signature, for index and collection names."""
    return hashlib.sha256(signature.encode("utf-8")).hexdigest()[:n]


def sql_literal(text: str) -> str:
    """``text`` as a PostgreSQL escape-string literal (``E'...'``), like ``quote_literal``.

    Correct whatever ``standard_conforming_strings`` is: backslashes and quotes are doubled
    inside an ``E''`` string. NUL is refused (PostgreSQL text cannot hold it).
    """
    if "\x00" in text:
        raise ValidationFailed("text for SQL must not contain NUL")
    return "E'" + text.replace("\\", "\\\\").replace("'", "''") + "'"


def as_vector(
    value: Sequence[float] | NDArray[np.float32], *, field: str, dim: int | None = None
) -> NDArray[np.float32]:
    """A finite, non-zero, 1-D float32 array (of ``dim`` entries when given), else ``ValidationFailed``."""
    try:
        arr = np.asarray(value, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise ValidationFailed(f"{field}: not a numeric vector") from exc
    if arr.ndim != 1 or arr.size == 0:
        raise ValidationFailed(f"{field}: must be a non-empty 1-D vector, got shape {arr.shape}")
    if dim is not None and arr.size != dim:
        raise ValidationFailed(f"{field}: expected {dim} dimensions, got {arr.size}")
    if arr.size > MAX_DIM:
        raise ValidationFailed(f"{field}: {arr.size} dimensions is over the limit {MAX_DIM}")
    if not np.all(np.isfinite(arr)):
        raise ValidationFailed(f"{field}: contains NaN or infinity")
    if not np.any(arr):
        raise ValidationFailed(f"{field}: the zero vector has no direction (cosine undefined)")
    return arr


def as_uuid(value: str, *, field: str = "memory_id") -> uuid.UUID:
    try:
        return uuid.UUID(str(value))
    except ValueError as exc:
        raise ValidationFailed(f"{field}: not a UUID: {value!r}") from exc


def check_half(vec: NDArray[np.float32], *, field: str) -> NDArray[np.float32]:
    """``vec`` if halfvec can hold it (finite and not zero in float16), else ``ValidationFailed``."""
    if float(np.max(np.abs(vec))) > HALF_MAX:
        raise ValidationFailed(f"{field}: a value is over {HALF_MAX:g}, the range of halfvec storage")
    if not np.any(vec.astype(np.float16)):
        raise ValidationFailed(f"{field}: every value underflows to 0 in halfvec storage (cosine undefined)")
    return vec


def check_items(
    items: Sequence[VectorItem], dim: int | None, *, half: bool = False
) -> tuple[list[VectorItem], list[NDArray[np.float32]], int]:
    """Validated items (last one wins per memory id), their vectors, and the common dimension
    (``half``: each also fits halfvec storage)."""
    by_id: dict[uuid.UUID, tuple[VectorItem, NDArray[np.float32]]] = {}
    for i, item in enumerate(items):
        vec = as_vector(item.vector, field=f"items[{i}].vector", dim=dim)
        if half:
            check_half(vec, field=f"items[{i}].vector")
        if dim is None:
            dim = int(vec.size)
        by_id[as_uuid(item.memory_id, field=f"items[{i}].memory_id")] = (item, vec)
    kept = list(by_id.values())
    return [k[0] for k in kept], [k[1] for k in kept], dim or 0


_ALLOWED: dict[str, tuple[str, ...]] = {
    "state": get_args(MemoryState),
    "scope": get_args(MemoryScope),
    "memory_type": get_args(MemoryType),
}


def check_patch(fields: dict[str, Any]) -> dict[str, Any]:
    """``update_payload`` fields, each value one the ``memories`` table accepts."""
    for name, value in fields.items():
        allowed = _ALLOWED.get(name)
        if allowed is not None and value not in allowed:
            raise ValidationFailed(f"{name}: must be one of {', '.join(allowed)}, got {value!r}")
    return fields


def aware(moment: datetime | None) -> datetime | None:
    """``moment`` with a time zone (naive datetimes are taken as UTC)."""
    if moment is not None and moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment


def epoch(moment: datetime | None) -> float | None:
    """Seconds since the epoch (naive datetimes are taken as UTC)."""
    moment = aware(moment)
    return None if moment is None else moment.timestamp()


def clamp_limit(limit: int) -> int:
    return max(0, min(int(limit), MAX_LIMIT))


def exact_pairs(
    ids: Sequence[str],
    vectors: NDArray[np.float32],
    probe: NDArray[np.bool_],
    *,
    min_score: float,
    per_memory: int,
    limit: int,
    chunk: int = 512,
) -> list[Pair]:
    """Exact per-memory kNN among ``vectors`` (rows of ``ids``): pairs at cosine >= ``min_score``.

    Only rows where ``probe`` is true look for partners (any row can be one). Memory is
    bounded by ``chunk`` x n similarities at a time. Pairs are returned once, ``a < b``,
    best first, at most ``limit``.
    """
    n = len(ids)
    if n < 2 or per_memory <= 0 or limit <= 0:
        return []
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit = vectors / np.where(norms == 0, 1, norms)
    k = min(per_memory, n - 1)
    found: dict[tuple[str, str], float] = {}
    rows = np.flatnonzero(probe)
    for start in range(0, rows.size, chunk):
        block = rows[start : start + chunk]
        sims = unit[block] @ unit.T
        sims[np.arange(block.size), block] = -np.inf  # never pair a memory with itself
        top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        for r, row in enumerate(block):
            for col in top[r]:
                score = float(sims[r, col])
                if score >= min_score:
                    _keep(found, ids[row], ids[col], score)
    return best_pairs(found.items(), limit)


def _keep(found: dict[tuple[str, str], float], a: str, b: str, score: float) -> None:
    key = (a, b) if a < b else (b, a)
    if score > found.get(key, -np.inf):
        found[key] = score


def merge_pairs(pairs: Iterable[tuple[str, str, float]]) -> dict[tuple[str, str], float]:
    """Pairs keyed ``(min, max)`` with the best score seen for each."""
    found: dict[tuple[str, str], float] = {}
    for a, b, score in pairs:
        if a != b:
            _keep(found, a, b, float(score))
    return found


def best_pairs(found: Iterable[tuple[tuple[str, str], float]], limit: int) -> list[Pair]:
    ranked = sorted(((a, b, s) for (a, b), s in found), key=lambda p: (-p[2], p[0], p[1]))
    return ranked[: max(0, limit)]
