"""An in-memory keyword index of one owner, ranked by BM25 in the searching process (pure, numpy).

Postings are PostgreSQL's own lexemes (``bench.keyword_inproc`` reads them from ``memories.tsv``),
in one compressed-sparse layout: per lexeme a slice of memory ordinals (int32) and counts
(uint8/uint16); per memory its ``created_at`` (µs) and id (two uint64 halves, so ids sort as
PostgreSQL's uuids do). Writes go to a small tail (appends) and a tombstone mask (deletes) until
``compact`` folds them in. ``search`` is the keyword tier's statement (``_bm25_sql``) over the
visible memories: the same idf, ``K1``, per-lexeme summation, and ties newest first, then by id.
"""

from __future__ import annotations

import uuid
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from services.retrieve.logic.bm25 import K1, score

I32 = npt.NDArray[np.int32]
F64 = npt.NDArray[np.float64]
U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Doc:
    """One memory as the index takes it: its id, ``created_at`` in µs since the epoch, and each
    lexeme of its ``tsv`` with its number of positions."""

    id: uuid.UUID
    created_us: int
    lexemes: Sequence[str]
    counts: Sequence[int]


@dataclass(frozen=True)
class Hit:
    id: uuid.UUID
    score: float


def _halves(ids: Iterable[uuid.UUID]) -> tuple[U64, U64]:
    ints = [u.int for u in ids]
    return (
        np.array([i >> 64 for i in ints], dtype=np.uint64),
        np.array([i & 0xFFFFFFFFFFFFFFFF for i in ints], dtype=np.uint64),
    )


class OwnerIndex:
    """One owner's postings. Ordinals number memories in insertion order; ``alive`` masks deletes."""

    def __init__(self, docs: Sequence[Doc]) -> None:
        self.vocab: dict[str, int] = {}
        lengths = np.fromiter((len(d.lexemes) for d in docs), dtype=np.int64, count=len(docs))
        lex = np.fromiter(
            (self.vocab.setdefault(x, len(self.vocab)) for d in docs for x in d.lexemes),
            dtype=np.int32,
            count=int(lengths.sum()),
        )
        counts = np.fromiter((c for d in docs for c in d.counts), dtype=np.int64, count=len(lex))
        ordinals = np.repeat(np.arange(len(docs), dtype=np.int32), lengths)
        hi, lo = _halves(d.id for d in docs)
        created = np.fromiter((d.created_us for d in docs), dtype=np.int64, count=len(docs))
        self._fold(lex, ordinals, counts, created, hi, lo)

    def _fold(self, lex: I32, ordinals: I32, counts: I64, created: I64, hi: U64, lo: U64) -> None:
        """Lay the postings ``(lex, ordinals, counts)`` out by lexeme, ordinals ascending within each."""
        order = np.lexsort((ordinals, lex))
        self.docs = ordinals[order]
        top = int(counts.max()) if len(counts) else 0
        self.tfs = counts[order].astype(np.uint8 if top < 256 else np.uint16)
        self.offsets = np.zeros(len(self.vocab) + 1, dtype=np.int64)
        np.cumsum(np.bincount(lex, minlength=len(self.vocab)), out=self.offsets[1:])
        self.size = n = len(created)
        room = n + max(64, n // 16)  # appends fill the room; a full one doubles
        self.created: I64 = np.resize(created, room)
        self.hi: U64 = np.resize(hi, room)
        self.lo: U64 = np.resize(lo, room)
        self.alive = np.zeros(room, dtype=np.bool_)
        self.alive[:n] = True
        self.dead = 0
        self.tail: dict[int, tuple[array[int], array[int]]] = {}
        self.tail_docs = 0
        self._scores = np.zeros(room, dtype=np.float64)
        self._occ = np.zeros(room, dtype=np.int32)
        self._claim = np.zeros(room, dtype=np.int32)

    def nbytes(self) -> dict[str, int]:
        """Bytes of the arrays by part: postings, per-memory columns, the search's scratch (the
        vocabulary dict and the tail are Python objects, measured apart)."""
        return {
            "postings": self.docs.nbytes + self.tfs.nbytes + self.offsets.nbytes,
            "memories": self.created.nbytes + self.hi.nbytes + self.lo.nbytes + self.alive.nbytes,
            "scratch": self._scores.nbytes + self._occ.nbytes + self._claim.nbytes,
        }

    # writes -------------------------------------------------------------------------------------

    def append(self, doc: Doc) -> int:
        """A new memory: its postings go to the tail, its row to the per-memory arrays."""
        n = self.size
        for x, c in zip(doc.lexemes, doc.counts, strict=True):
            key = self.vocab.setdefault(x, len(self.vocab))
            docs, tfs = self.tail.setdefault(key, (array("i"), array("H")))
            docs.append(n)
            tfs.append(c)
        if n == len(self.created):
            grown = 2 * n
            self.created, self.hi, self.lo = (
                np.resize(self.created, grown),
                np.resize(self.hi, grown),
                np.resize(self.lo, grown),
            )
            self.alive = np.concatenate((self.alive, np.zeros(grown - n, dtype=np.bool_)))
            self._scores, self._occ = np.zeros(grown, dtype=np.float64), np.zeros(grown, dtype=np.int32)
            self._claim = np.zeros(grown, dtype=np.int32)
        self.created[n] = doc.created_us
        self.hi[n], self.lo[n] = doc.id.int >> 64, doc.id.int & 0xFFFFFFFFFFFFFFFF
        self.alive[n] = True
        self.size = n + 1
        self.tail_docs += 1
        return n

    def delete(self, memory: uuid.UUID) -> bool:
        """Mask a memory (found by its id); False when the index does not hold it."""
        hi, lo = np.uint64(memory.int >> 64), np.uint64(memory.int & 0xFFFFFFFFFFFFFFFF)
        n = self.size
        at = np.flatnonzero((self.hi[:n] == hi) & (self.lo[:n] == lo) & self.alive[:n])
        if not len(at):
            return False
        self.alive[at[0]] = False
        self.dead += 1
        return True

    def compact(self) -> None:
        """Fold the tail in and drop the deleted memories (ordinals renumbered)."""
        lex = np.repeat(np.arange(len(self.offsets) - 1, dtype=np.int32), np.diff(self.offsets))
        parts_l, parts_d, parts_c = [lex], [self.docs], [self.tfs.astype(np.int64)]
        for key, (docs, tfs) in self.tail.items():
            parts_l.append(np.full(len(docs), key, dtype=np.int32))
            parts_d.append(np.frombuffer(docs, dtype=np.int32))
            parts_c.append(np.frombuffer(tfs, dtype=np.uint16).astype(np.int64))
        lex, ordinals, counts = np.concatenate(parts_l), np.concatenate(parts_d), np.concatenate(parts_c)
        keep = self.alive[ordinals]
        alive = self.alive[: self.size]
        renumber = (np.cumsum(alive) - 1).astype(np.int32)
        # a lexeme whose postings all went keeps an empty slice
        self._fold(
            lex[keep], renumber[ordinals[keep]], counts[keep], self.created[: self.size][alive],
            self.hi[: self.size][alive], self.lo[: self.size][alive],
        )  # fmt: skip

    # search -------------------------------------------------------------------------------------

    def postings(self, key: int) -> tuple[I32, npt.NDArray[Any]]:
        """One lexeme's visible postings (main slice plus tail, deleted memories dropped)."""
        if key < len(self.offsets) - 1:
            a, b = self.offsets[key], self.offsets[key + 1]
            docs, tfs = self.docs[a:b], self.tfs[a:b]
        else:
            docs, tfs = np.empty(0, dtype=np.int32), np.empty(0, dtype=np.uint8)
        if (extra := self.tail.get(key)) is not None:
            docs = np.concatenate((docs, np.frombuffer(extra[0], dtype=np.int32)))
            tfs = np.concatenate((tfs, np.frombuffer(extra[1], dtype=np.uint16)))
        if self.dead:
            keep = self.alive[docs]
            docs, tfs = docs[keep], tfs[keep]
        return docs, tfs

    def search(self, lexemes: Iterable[str], limit: int) -> tuple[list[Hit], int]:
        """The top ``limit`` memories holding any of ``lexemes`` (BM25, ties newest first, then id)
        and the most question-lexeme occurrences any of them holds (the statement's cover)."""
        keys = sorted({self.vocab[x] for x in set(lexemes) if x in self.vocab})
        n = float(self.size - self.dead)
        scores, occ = self._scores, self._occ
        touched: list[I32] = []
        for key in keys:
            docs, tfs = self.postings(key)
            if not len(docs):
                continue
            df = float(len(docs))
            idf = np.log(1 + (max(n, df) - df + 0.5) / (df + 0.5))
            top = int(tfs.max())
            tf = np.arange(top + 1, dtype=np.float64)
            weight = idf * tf * (K1 + 1) / (tf + K1)  # the same operations, in the same order, as SQL
            scores[docs] += weight[tfs]
            occ[docs] += tfs
            touched.append(docs)
        if not touched:
            return [], 0
        cand = self._union(touched)
        got, occurrences = scores[cand], int(occ[cand].max())
        scores[cand], occ[cand] = 0.0, 0
        return self._top(cand, got, limit), occurrences

    def _union(self, lists: list[I32]) -> I32:
        """The memories in any of ``lists`` (each without repeats), in linear time: each position
        of the concatenation claims its memory in ``_claim``, one claim per memory survives, and the
        positions that kept theirs name each memory once (whichever claim won)."""
        if len(lists) == 1:
            return lists[0]
        every = np.concatenate(lists)
        at = np.arange(len(every), dtype=np.int32)
        claim = self._claim
        claim[every] = at
        return every[claim[every] == at]

    def _top(self, cand: I32, got: F64, limit: int) -> list[Hit]:
        if limit <= 0:
            return []
        if len(cand) > limit:
            # the scores take few distinct values (short texts, flat weights), where selecting from
            # the low end is several times faster than from the high end
            kth = -np.partition(-got, limit - 1)[limit - 1]
            keep = got >= kth  # the whole tie group of the last place
            cand, got = cand[keep], got[keep]
        # lexsort: the last key sorts first
        order = np.lexsort((self.lo[cand], self.hi[cand], -self.created[cand], -got))[:limit]
        return [
            Hit(uuid.UUID(int=(int(self.hi[c]) << 64) | int(self.lo[c])), float(s))
            for c, s in zip(cand[order], got[order], strict=True)
        ]


def brute_force(docs: Sequence[Doc], lexemes: Iterable[str], limit: int, k1: float = K1) -> list[Hit]:
    """BM25 of every memory holding a question lexeme, one at a time (``logic.bm25.score``): the
    reference ``OwnerIndex.search`` is tested against."""
    question = sorted(set(lexemes))
    df = {x: sum(x in d.lexemes for d in docs) for x in question}
    ranked = []
    for d in docs:
        tf = dict(zip(d.lexemes, d.counts, strict=True))
        held = [x for x in question if x in tf]
        if held:
            s = score(len(docs), [df[x] for x in held], [tf[x] for x in held], k1)
            ranked.append((-s, -d.created_us, d.id.bytes, Hit(d.id, s)))
    ranked.sort(key=lambda r: r[:3])
    return [r[3] for r in ranked[:limit]]
