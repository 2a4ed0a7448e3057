"""An owner's vectors held beside its in-memory keyword index, ranked exactly (pure, numpy).

Row ``i`` is the vector of the memory at the index's ordinal ``i`` (``keyword_index.OwnerIndex``),
stored as a unit vector, so a search is one matrix-vector product over the owner's memories: the
exact cosine ranking pgvector's exact path gives (``1 - (a <=> b)``), ties by id as PostgreSQL
orders uuids. A memory without a vector of the held signature has a zero row and ranks nowhere.
Over 10,000 rows the product costs the retrieve service about what pgvector's HNSW probe costs
PostgreSQL, and moves that work to the workers that scale out; over 100,000 it costs several
times more (``bench latency``). So only an owner of up to 5,000 memories, where pgvector too
searches exactly, has float rows; a larger one's are held packed (``packed_vectors``: a fraction
of the product's CPU) or, above ``adapters.keyword_memory``'s cap, left to the vector store.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Self

import numpy as np
import numpy.typing as npt

F32 = npt.NDArray[np.float32]
I64 = npt.NDArray[np.int64]
U64 = npt.NDArray[np.uint64]
Mask = npt.NDArray[np.bool_]


def unit(vector: npt.ArrayLike) -> F32 | None:
    """``vector`` scaled to length 1 as float32; None when it has no direction (zero, or not finite)."""
    v = np.asarray(vector, dtype=np.float32).ravel()
    norm = float(np.linalg.norm(v))
    if not np.isfinite(norm) or norm == 0.0:
        return None
    return v / np.float32(norm)


def units(rows: npt.ArrayLike) -> tuple[Mask, F32]:
    """Which of ``rows`` have a direction (as ``unit`` takes them, all at once), and those scaled to
    length 1 as float32."""
    rows = np.asarray(rows).astype(np.float32, copy=False)
    with np.errstate(invalid="ignore", over="ignore"):
        norms = np.linalg.norm(rows, axis=1)
    ok = np.isfinite(norms) & (norms > 0)
    return ok, rows[ok] / norms[ok, None]


def best_first(at: I64, scores: F32, hi: U64, lo: U64, k: int) -> I64:
    """The positions in ``at`` (ordinals) of its ``k`` best by ``scores`` (one per ordinal), best
    first; scores equal to 6 decimals tie, and ties go by id (PostgreSQL's exact ties do): equal
    vectors may differ in the last bit by their rows' place in a product's blocks."""
    return np.lexsort((lo[at], hi[at], -np.round(scores.astype(np.float64), 6)))[:k]


def decode_sent(blob: bytes | None, dim: int | None = None) -> F32:
    """Vectors from PostgreSQL's binary ``vector_send`` forms, concatenated (each a 4-byte header,
    then ``dim`` big-endian float4s), as rows of float32; ``dim`` is read from the first header when
    not given. The rows are a big-endian view of ``blob``, not a copy (an owner's vectors can be
    hundreds of megabytes): the holders convert them as they take them."""
    if not blob:
        return np.zeros((0, dim or 0), dtype=np.float32)
    if dim is None:
        dim = int.from_bytes(blob[:2], "big")
    return np.frombuffer(blob, dtype=">f4").reshape(-1, dim + 1)[:, 1:]


class VectorRows(ABC):
    """What holders of an index's vectors by ordinal share: ``dim``, ``has`` (the ordinals held) and
    how vectors come in, scaled to length 1 and handed to the holder's ``_set``."""

    #: rows scaled and handed over at once when many come (bounds the float copy a build makes)
    CHUNK = 4096

    def __init__(self, dim: int, room: int) -> None:
        self.dim = dim
        self.has: Mask = np.zeros(room, dtype=np.bool_)

    @abstractmethod
    def _set(self, at: I64, rows: F32) -> None:
        """Hold the unit ``rows`` at ordinals ``at``."""

    @classmethod
    def of(cls, vectors: Sequence[F32 | None], room: int) -> Self | None:
        """Rows for ``vectors`` by ordinal (None: none for that memory); None when none is given."""
        dim = next((len(v) for v in vectors if v is not None), None)
        if dim is None:
            return None
        held = cls(dim, max(room, len(vectors)))
        at = np.array([i for i, v in enumerate(vectors) if v is not None and len(v) == dim], dtype=np.int64)
        for start in range(0, len(at), cls.CHUNK):
            part = at[start : start + cls.CHUNK]
            ok, rows = units(np.stack([vectors[i] for i in part.tolist()]))
            held._set(part[ok], rows)
        return held

    def put(self, ordinal: int, vector: F32 | None) -> None:
        """Hold ``vector`` (any length; scaled to 1) at ``ordinal``; nothing when it is None or of
        another dimension than the rows held."""
        row = None if vector is None or len(vector) != self.dim else unit(vector)
        if row is None:
            self.has[ordinal] = False
            return
        self._set(np.array([ordinal], dtype=np.int64), row[None, :])


class HeldVectors(VectorRows):
    """The unit vectors of an index's ordinals as float rows (``room`` of them), ranked exactly."""

    def __init__(self, dim: int, room: int) -> None:
        super().__init__(dim, room)
        self.matrix: F32 = np.zeros((room, dim), dtype=np.float32)

    def _set(self, at: I64, rows: F32) -> None:
        self.matrix[at] = rows
        self.has[at] = True

    def grow(self, room: int) -> None:
        """Room for ``room`` ordinals (the new rows hold nothing)."""
        extra = room - len(self.has)
        if extra > 0:
            self.matrix = np.concatenate((self.matrix, np.zeros((extra, self.dim), dtype=np.float32)))
            self.has = np.concatenate((self.has, np.zeros(extra, dtype=np.bool_)))

    def kept(self, keep: Mask, room: int) -> HeldVectors:
        """The rows of the first ``len(keep)`` ordinals that ``keep`` marks, renumbered from 0 (as the
        index's ``compact`` renumbers), with room for ``room``."""
        out = HeldVectors(self.dim, max(room, int(keep.sum())))
        n = int(keep.sum())
        out.matrix[:n] = self.matrix[: len(keep)][keep]
        out.has[:n] = self.has[: len(keep)][keep]
        return out

    @property
    def nbytes(self) -> int:
        return int(self.matrix.nbytes + self.has.nbytes)

    def nearest(self, query: F32, limit: int, seen: Mask, hi: U64, lo: U64) -> tuple[I64, F32]:
        """The ``limit`` ordinals among ``seen`` (a mask over the first ``len(hi)`` ordinals) nearest
        to ``query`` by cosine, best first, ties by id; and their cosines."""
        n = len(hi)
        q = unit(query)
        if q is None or len(q) != self.dim or limit <= 0 or n == 0:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
        usable = seen[:n] & self.has[:n]
        scores = self.matrix[:n] @ q
        scores[~usable] = -np.inf
        found = int(usable.sum())
        k = min(limit, found)
        if k == 0:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
        top = np.argpartition(-scores, k - 1)[:k] if k < n else np.arange(n)
        top = top[np.isfinite(scores[top])]
        # a tie at the cut may leave a smaller id outside ``top``: take every row at the cut's score
        cut = scores[top].min()
        ties = np.flatnonzero(np.abs(scores - cut) <= 1e-6)
        if len(ties) > 1:
            top = np.union1d(top, ties)
        chosen = top[best_first(top, scores[top], hi, lo, k)].astype(np.int64)
        return chosen, scores[chosen]
