"""An owner's vectors held packed, for owners past exact ranking's size (pure, numpy).

Each unit vector is held twice, small: the signs of its components as bits (``dim / 8`` bytes) and
its components as int8 with one scale per row (``dim + 4`` bytes): 436 bytes per memory of 384
dimensions against the 1,536 of the float rows ``held_vectors`` ranks exactly. A search reads the
bits of every row the view sees (480 kB at 10,000 memories, where the exact product reads 15 MB)
and keeps the rows nearest by Hamming distance to the query's signs (the fraction of differing
signs estimates the angle between two vectors), at least ``RERANK_PER_RESULT`` for each result
asked and never fewer than ``RERANK_MIN``; those are ranked by the cosine of their int8 rows, ties
by id as ``held_vectors`` and PostgreSQL order them. The ranking is approximate, as an HNSW probe's
is: recall@100 against the exact ranking 0.996 on 10,000 MiniLM vectors (docs/decisions.md).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from services.retrieve.logic.held_vectors import F32, I64, U64, HeldVectors, Mask, VectorRows, best_first, unit

I8 = npt.NDArray[np.int8]

#: rows kept by sign distance for each result asked, and at least this many, before the int8 ranking
RERANK_PER_RESULT = 8
RERANK_MIN = 400


def _words(dim: int) -> int:
    return -(-dim // 64)


def _signs(rows: F32, words: int) -> U64:
    """The sign bits of ``rows`` (one row per vector) as ``words`` 64-bit words each, zero-padded."""
    bits = np.packbits(rows > 0, axis=1)
    padded = np.zeros((len(rows), 8 * words), dtype=np.uint8)
    padded[:, : bits.shape[1]] = bits
    return padded.view(np.uint64)


def _quantized(rows: F32) -> tuple[I8, F32]:
    """``rows`` as int8 components and one scale per row (a zero row keeps scale 0)."""
    scale = (np.abs(rows).max(axis=1) / np.float32(127)).astype(np.float32)
    safe = np.where(scale > 0, scale, np.float32(1))
    return np.rint(rows / safe[:, None]).astype(np.int8), scale


class PackedVectors(VectorRows):
    """The packed unit vectors of an index's ordinals (``room`` rows), ranked approximately."""

    def __init__(self, dim: int, room: int) -> None:
        super().__init__(dim, room)
        self.signs: U64 = np.zeros((_words(dim), room), dtype=np.uint64)  # a word's bits of every row together
        self.rows: I8 = np.zeros((room, dim), dtype=np.int8)
        self.scale: F32 = np.zeros(room, dtype=np.float32)

    @classmethod
    def packing(cls, held: HeldVectors) -> PackedVectors:
        """``held``'s rows packed (an owner that outgrew exact ranking)."""
        room = len(held.has)
        packed = cls(held.dim, room)
        at = np.flatnonzero(held.has)
        for start in range(0, len(at), cls.CHUNK):
            part = at[start : start + cls.CHUNK]
            packed._set(part, held.matrix[part])
        return packed

    def _set(self, at: I64, rows: F32) -> None:
        self.signs[:, at] = _signs(rows, len(self.signs)).T
        self.rows[at], self.scale[at] = _quantized(rows)
        self.has[at] = True

    def grow(self, room: int) -> None:
        """Room for ``room`` ordinals (the new rows hold nothing)."""
        extra = room - len(self.has)
        if extra > 0:
            self.signs = np.concatenate((self.signs, np.zeros((len(self.signs), extra), dtype=np.uint64)), axis=1)
            self.rows = np.concatenate((self.rows, np.zeros((extra, self.dim), dtype=np.int8)))
            self.scale = np.concatenate((self.scale, np.zeros(extra, dtype=np.float32)))
            self.has = np.concatenate((self.has, np.zeros(extra, dtype=np.bool_)))

    def kept(self, keep: Mask, room: int) -> PackedVectors:
        """The rows of the first ``len(keep)`` ordinals that ``keep`` marks, renumbered from 0 (as the
        index's ``compact`` renumbers), with room for ``room``."""
        n = int(keep.sum())
        out = PackedVectors(self.dim, max(room, n))
        out.signs[:, :n] = self.signs[:, : len(keep)][:, keep]
        out.rows[:n] = self.rows[: len(keep)][keep]
        out.scale[:n] = self.scale[: len(keep)][keep]
        out.has[:n] = self.has[: len(keep)][keep]
        return out

    @property
    def nbytes(self) -> int:
        return int(self.signs.nbytes + self.rows.nbytes + self.scale.nbytes + self.has.nbytes)

    def nearest(self, query: F32, limit: int, seen: Mask, hi: U64, lo: U64) -> tuple[I64, F32]:
        """The ``limit`` ordinals among ``seen`` (a mask over the first ``len(hi)`` ordinals) nearest
        to ``query`` by the cosine of their int8 rows, among those nearest by sign distance; best
        first, ties by id; and those cosines."""
        n = len(hi)
        q = unit(query)
        none = np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
        if q is None or len(q) != self.dim or limit <= 0 or n == 0:
            return none
        usable = seen[:n] & self.has[:n]
        found = int(np.count_nonzero(usable))
        k = min(limit, found)
        if k == 0:
            return none
        depth = max(RERANK_MIN, RERANK_PER_RESULT * k)
        cand = np.flatnonzero(usable) if depth >= found else self._nearest_signs(q, usable, n, depth)
        scores = (self.rows[cand].astype(np.float32) @ q) * self.scale[cand]
        order = best_first(cand, scores, hi, lo, k)
        return cand[order].astype(np.int64), scores[order]

    def _nearest_signs(self, q: F32, usable: Mask, n: int, depth: int) -> I64:
        """The usable rows of the first ``n`` within the smallest sign distance to ``q`` that holds at
        least ``depth`` of them (all of that distance: no tie at the cut is broken by position)."""
        words = _signs(q[None, :], len(self.signs))[0]
        far = self.dim + 1  # past any distance: the rows not usable
        distance = np.zeros(n, dtype=np.uint16)
        differ, count = np.empty(n, dtype=np.uint64), np.empty(n, dtype=np.uint8)
        for column, word in zip(self.signs, words, strict=True):  # into buffers: no array made per word
            np.bitwise_xor(column[:n], word, out=differ)
            np.add(distance, np.bitwise_count(differ, out=count), out=distance)
        distance[~usable] = far
        within = np.cumsum(np.bincount(distance, minlength=far + 1))
        cut = int(np.searchsorted(within, depth))  # the first distance with ``depth`` rows within it
        return np.flatnonzero(distance <= cut)
