"""An in-memory keyword index of one owner, ranked by BM25 in the retrieve process (pure, numpy).

Postings are PostgreSQL's own lexemes (``memories.tsv``) in one compressed-sparse layout: per
lexeme a slice of memory ordinals (int32) and counts; per memory the columns visibility reads
(``created_at`` and ``expires_at`` in µs, type, session, agent, global scope), its id (two
uint64 halves, so ids sort as PostgreSQL's uuids do) and what a search's rows show (content and
metadata text, scope, source: ``held_rows``), with a sorted id index. Writes go to a small tail (appends) and a
tombstone mask (deletes) until ``compact`` folds them in. ``search`` is the keyword tier's
statement (``adapters.postgres._bm25_sql``) over the memories a ``View`` lets a request see: the
same idf, ``K1``, per-lexeme summation, ``N``, and ties newest first, then by id.
"""

from __future__ import annotations

import re
import sys
import uuid
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import compress
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from services.retrieve.logic.bm25 import K1, score
from services.retrieve.logic.held_vectors import HeldVectors
from services.retrieve.logic.packed_vectors import PackedVectors

I32 = npt.NDArray[np.int32]
F64 = npt.NDArray[np.float64]
U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]
Vectors = HeldVectors | PackedVectors  # an index's vectors: float rows ranked exactly, or packed

#: ``expires_at`` of a memory that never expires
NEVER = np.iinfo(np.int64).max
#: the code of a NULL session or agent, and of a name the index has never seen
_NULL, _UNSEEN = -1, -2


class Doc(NamedTuple):
    """One memory as the index takes it: its id, ``created_at`` in µs since the epoch, each
    lexeme of its ``tsv`` with its number of positions, the columns visibility reads, and the
    columns of its row (``metadata``: the jsonb's text) (a tuple: a build makes one per memory,
    several times faster than a frozen dataclass)."""

    id: uuid.UUID
    created_us: int
    lexemes: Sequence[str]
    counts: Sequence[int]
    expires_us: int = int(NEVER)
    type: str = "factual"
    session_id: str | None = None
    agent_id: str | None = None
    global_scope: bool = False
    content: str = ""
    scope: str = "apiKey"
    metadata: str = "{}"
    source: str = "api"
    #: its vector of the held signature (``held_vectors``), when the index holds vectors
    vector: npt.NDArray[np.float32] | None = None


@dataclass(frozen=True)
class View:
    """What one request may see of the owner's memories (``adapters.postgres._Clauses``): unexpired
    at ``now_us``, created after ``created_after_us``, of ``types`` (None: any), and of the session
    and agent when given; the owner's global memories are seen whatever their session or agent."""

    now_us: int
    created_after_us: int
    types: tuple[str, ...] | None = None
    session_id: str | None = None
    agent_id: str | None = None


class Matches(NamedTuple):
    """Every match of one search, scored (``OwnerIndex.search_keeping``): valid while the index is at
    ``generation`` (a write may renumber the ordinals)."""

    generation: int
    ordinals: npt.NDArray[np.int32]
    scores: npt.NDArray[np.float64]


class _Static(NamedTuple):
    """``OwnerIndex.visible``'s part that does not depend on the time (``key``: the index's
    generation, the types, session and agent asked): the memories of the session and agent
    (``own``) and the global ones (``seen_global``) alive and of the types, their union as a full
    mask and ``own``'s count, and the earliest ``expires_at`` and ``created_at`` of any memory held
    (while the time filters pass both, they pass every memory)."""

    key: tuple[Any, ...]
    own: Mask
    seen_global: Mask
    mask: Mask
    documents: int
    earliest_expiry: int
    earliest_created: int


class Hit(NamedTuple):
    """A match as the keyword tier lists it: ``(id, score)`` (a tuple: built per hit)."""

    id: str  # the uuid's canonical text, as ``str(uuid.UUID)`` writes it
    score: float


_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
_NIBBLES = np.arange(60, -4, -4, dtype=np.uint64)
#: where the 32 hex digits of a uuid's canonical text go
_DIGITS_AT = np.array([i for i in range(36) if i not in (8, 13, 18, 23)])


def uuid_texts(hi: U64, lo: U64) -> list[str]:
    """``str(uuid.UUID(int=hi << 64 | lo))`` of each pair, vectorised (no UUID built)."""
    n = len(hi)
    text = np.full((n, 36), ord("-"), dtype=np.uint8)
    text[:, _DIGITS_AT] = _HEX[np.concatenate(((hi[:, None] >> _NIBBLES) & 15, (lo[:, None] >> _NIBBLES) & 15), axis=1)]
    joined = text.tobytes().decode("ascii")
    return [joined[i : i + 36] for i in range(0, 36 * n, 36)]


#: one entry of a tsvector's text (``'lexeme':1,4B``): PostgreSQL doubles a quote or a backslash in it
_ENTRY = re.compile(r"'((?:[^'\\]|''|\\.)*)'(?::([0-9A-D,]+))?")
_PLAIN_ENTRY = re.compile(r"'([^'\\]*)'(?::([0-9A-D,]+))?")
_ESCAPED = re.compile(r"''|\\(.)")


def tsvector_entries(text: str) -> tuple[list[str], list[int]]:
    """The lexemes of a tsvector written as text (``tsv::text``) and each one's number of positions
    (1 where it has none); reading the text is cheaper for PostgreSQL than unnesting the vector."""
    if "''" not in text and "\\" not in text:
        pairs = _PLAIN_ENTRY.findall(text)
        return [x for x, _ in pairs], [p.count(",") + 1 if p else 1 for _, p in pairs]
    lexemes, counts = [], []
    for x, positions in _ENTRY.findall(text):
        lexemes.append(_ESCAPED.sub(lambda m: m.group(1) or "'", x))
        counts.append(positions.count(",") + 1 if positions else 1)
    return lexemes, counts


def _halves(ids: Iterable[uuid.UUID]) -> tuple[U64, U64]:
    ints = [u.int for u in ids]
    return (
        np.array([i >> 64 for i in ints], dtype=np.uint64),
        np.array([i & 0xFFFFFFFFFFFFFFFF for i in ints], dtype=np.uint64),
    )


def parse_ids(ids: Sequence[str]) -> tuple[U64, U64] | None:
    """The two halves of each uuid text, or None unless every one is in the lower-case canonical
    form ``str(uuid.UUID)`` and PostgreSQL write (the form ids are compared in)."""
    joined = "".join(ids)
    if len(joined) != 36 * len(ids) or joined != joined.lower():
        return None
    if not all(x[8] == x[13] == x[18] == x[23] == "-" for x in ids):
        return None
    try:
        raw = bytes.fromhex(joined.replace("-", ""))
    except ValueError:
        return None
    halves = np.frombuffer(raw, dtype=">u8").reshape(-1, 2).astype(np.uint64)
    return halves[:, 0], halves[:, 1]


#: per-memory columns and their types (``alive`` and the scratch arrays are kept apart)
_COLUMNS = {
    "created": np.int64,
    "expires": np.int64,
    "hi": np.uint64,
    "lo": np.uint64,
    "kind": np.int32,
    "session": np.int32,
    "agent": np.int32,
    "glob": np.bool_,
    "scope": np.int32,
    "source": np.int32,
}


class OwnerIndex:
    """One owner's postings. Ordinals number memories in insertion order; ``alive`` masks deletes."""

    def __init__(self, docs: Sequence[Doc], *, packed: bool = False) -> None:
        """The index of ``docs``; their vectors held as float rows, ranked exactly, or ``packed``
        (``logic.packed_vectors``: a third of the bytes, ranked approximately)."""
        self.vocab: dict[str, int] = {}
        self.names: dict[str, int] = {}  # types, sessions, agents, scopes and sources, interned
        self.labels: list[str] = []  # ``names`` by code
        vocab, code = self.vocab, self.vocab.setdefault
        # list comprehensions, then one conversion each: several times faster than numpy.fromiter
        lengths = np.array([len(d.lexemes) for d in docs], dtype=np.int64)
        lex = np.array([code(x, len(vocab)) for d in docs for x in d.lexemes], dtype=np.int32)
        counts = np.array([c for d in docs for c in d.counts], dtype=np.int64)
        ordinals = np.repeat(np.arange(len(docs), dtype=np.int32), lengths)
        hi, lo = _halves(d.id for d in docs)
        columns = zip(*(self._row(d) for d in docs), strict=True) if docs else ((),) * len(_COLUMNS)
        cols: dict[str, Any] = {
            name: np.array(col, dtype=tp) for (name, tp), col in zip(_COLUMNS.items(), columns, strict=True)
        }
        cols["hi"], cols["lo"] = hi, lo
        vectors = (PackedVectors if packed else HeldVectors).of([d.vector for d in docs], len(docs))
        self._fold(lex, ordinals, counts, cols, [d.content for d in docs], [d.metadata for d in docs], vectors)

    def code(self, name: str | None) -> int:
        """``name``'s code (interned now when new; ``_NULL`` for None)."""
        if name is None:
            return _NULL
        code = self.names.get(name)
        if code is None:
            code = self.names[name] = len(self.labels)
            self.labels.append(name)
        return code

    def _row(self, d: Doc) -> tuple[int, int, int, int, int, int, int, bool, int, int]:
        i, code = d.id.int, self.code
        return (
            d.created_us, d.expires_us, i >> 64, i & 0xFFFFFFFFFFFFFFFF, code(d.type), code(d.session_id),
            code(d.agent_id), d.global_scope, code(d.scope), code(d.source),
        )  # fmt: skip

    def _fold(
        self,
        lex: I32,
        ordinals: I32,
        counts: I64,
        cols: dict[str, Any],
        texts: list[str],
        metas: list[str],
        vectors: Vectors | None,
    ) -> None:
        """Lay the postings ``(lex, ordinals, counts)`` out by lexeme, ordinals ascending within each."""
        order = np.lexsort((ordinals, lex))
        self.docs = ordinals[order]
        top = int(counts.max()) if len(counts) else 0
        self.tfs = counts[order].astype(np.uint8 if top < 256 else np.uint16)
        self.offsets = np.zeros(len(self.vocab) + 1, dtype=np.int64)
        np.cumsum(np.bincount(lex, minlength=len(self.vocab)), out=self.offsets[1:])
        self.size = n = len(cols["created"])
        room = n + max(64, n // 16)  # appends fill the room; a full one doubles
        self.cols: dict[str, Any] = {name: np.resize(cols[name].astype(tp), room) for name, tp in _COLUMNS.items()}
        self.alive = np.zeros(room, dtype=np.bool_)
        self.alive[:n] = True
        self.vectors = vectors  # the memories' vectors by ordinal, when held
        if vectors is not None:
            vectors.grow(room)
        self.dead = 0
        self.tail: dict[int, tuple[array[int], array[int]]] = {}
        self.tail_docs = 0
        self._scores = np.zeros(room, dtype=np.float64)
        self._occ = np.zeros(room, dtype=np.int32)
        self._claim = np.zeros(room, dtype=np.int32)
        self.generation = getattr(self, "generation", 0) + 1  # changes with every write
        self._seen: tuple[int, View, Mask] | None = None  # the last ``visible`` mask, and of what
        self._static: _Static | None = None  # ``visible``'s time-independent part, and of what
        self.texts, self.metas = texts, metas  # content and metadata text by ordinal
        self.text_bytes = sum(map(sys.getsizeof, texts)) + sum(map(sys.getsizeof, metas))
        self._id_order = np.lexsort((self.lo[:n], self.hi[:n])).astype(np.int32)  # the ids' order
        self._id_hi, self._id_lo = self.hi[:n][self._id_order], self.lo[:n][self._id_order]
        self._tail_ids: dict[int, int] = {}  # appended since the fold: id (as an int) -> ordinal

    @property
    def hi(self) -> U64:
        return self.cols["hi"]

    @property
    def lo(self) -> U64:
        return self.cols["lo"]

    @property
    def created(self) -> I64:
        return self.cols["created"]

    def nbytes(self) -> dict[str, int]:
        """Bytes of the arrays by part: postings, per-memory columns, the search's scratch (the
        vocabulary dict and the tail are Python objects, measured apart)."""
        return {
            "postings": self.docs.nbytes + self.tfs.nbytes + self.offsets.nbytes,
            "memories": sum(c.nbytes for c in self.cols.values()) + self.alive.nbytes,
            "rows": self.text_bytes
            + 8 * (len(self.texts) + len(self.metas))
            + self._id_hi.nbytes
            + self._id_lo.nbytes
            + self._id_order.nbytes
            + 100 * len(self._tail_ids),
            "scratch": self._scores.nbytes + self._occ.nbytes + self._claim.nbytes,
            "vectors": 0 if self.vectors is None else self.vectors.nbytes,
        }

    def dirty(self) -> int:
        """Appended and deleted memories not folded in yet (``compact`` folds them)."""
        return self.tail_docs + self.dead

    # writes -------------------------------------------------------------------------------------

    def append(self, doc: Doc) -> int:
        """A new memory: its postings go to the tail, its row to the per-memory arrays."""
        n = self.size
        for x, c in zip(doc.lexemes, doc.counts, strict=True):
            key = self.vocab.setdefault(x, len(self.vocab))
            docs, tfs = self.tail.setdefault(key, (array("i"), array("H")))
            docs.append(n)
            tfs.append(c)
        if n == len(self.alive):
            grown = 2 * n
            self.cols = {name: np.resize(col, grown) for name, col in self.cols.items()}
            self.alive = np.concatenate((self.alive, np.zeros(grown - n, dtype=np.bool_)))
            self._scores, self._occ = np.zeros(grown, dtype=np.float64), np.zeros(grown, dtype=np.int32)
            self._claim = np.zeros(grown, dtype=np.int32)
            if self.vectors is not None:
                self.vectors.grow(grown)
        if doc.vector is not None and self.vectors is None:
            self.vectors = HeldVectors(len(doc.vector), len(self.alive))
        if self.vectors is not None:
            self.vectors.put(n, doc.vector)
        for (name, _), value in zip(_COLUMNS.items(), self._row(doc), strict=True):
            self.cols[name][n] = value
        self.texts.append(doc.content)
        self.metas.append(doc.metadata)
        self.text_bytes += sys.getsizeof(doc.content) + sys.getsizeof(doc.metadata)
        self._tail_ids[doc.id.int] = n
        self.generation += 1
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
        self.generation += 1
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
        cols = {name: col[: self.size][alive] for name, col in self.cols.items()}
        texts, metas = list(compress(self.texts, alive.tolist())), list(compress(self.metas, alive.tolist()))
        vectors = None if self.vectors is None else self.vectors.kept(alive, int(alive.sum()))
        self._fold(lex[keep], renumber[ordinals[keep]], counts[keep], cols, texts, metas, vectors)

    def pack_vectors(self) -> None:
        """Hold the vectors packed from now on (the owner outgrew exact ranking)."""
        if isinstance(self.vectors, HeldVectors):
            self.vectors = PackedVectors.packing(self.vectors)

    def drop_vectors(self) -> None:
        """Hold no vectors any more (the owner outgrew the cap: the vector store ranks them)."""
        self.vectors = None

    def nearest(self, query: npt.NDArray[np.float32], limit: int, view: View) -> list[tuple[str, float]]:
        """The ``limit`` memories ``view`` sees nearest to ``query`` by cosine, best first, as
        ``(memory_id, cosine)`` (the vector tier's ranked list); empty when no vector is held."""
        if self.vectors is None:
            return []
        n = self.size
        chosen, scores = self.vectors.nearest(query, limit, self.seen_by(view), self.hi[:n], self.lo[:n])
        return list(zip(uuid_texts(self.hi[chosen], self.lo[chosen]), scores.astype(float).tolist(), strict=True))

    def ordinals(self, ids: Sequence[str]) -> I64:
        """The live ordinal of each of ``ids`` (uuid text), -1 where the index holds none (every one
        when a text is not a canonical uuid)."""
        if not ids:
            return np.empty(0, dtype=np.int64)
        out = np.full(len(ids), -1, dtype=np.int64)
        if (parsed := parse_ids(ids)) is None:
            return out
        hi, lo = parsed
        if len(self._id_hi):
            at = np.minimum(np.searchsorted(self._id_hi, hi), len(self._id_hi) - 1)
            same = self._id_hi[at] == hi
            hit = same & (self._id_lo[at] == lo)
            out[hit] = self._id_order[at[hit]]
            for i in np.flatnonzero(same & ~hit).tolist():  # an id sharing its first half with another
                a, b = int(at[i]), int(np.searchsorted(self._id_hi, hi[i], side="right"))
                j = a + int(np.searchsorted(self._id_lo[a:b], lo[i]))
                if j < b and self._id_lo[j] == lo[i]:
                    out[i] = self._id_order[j]
        if self._tail_ids:
            tail = self._tail_ids
            for i, (h, lw) in enumerate(zip(hi.tolist(), lo.tolist(), strict=True)):
                if (o := tail.get(h << 64 | lw)) is not None:
                    out[i] = o
        alive = self.alive[np.maximum(out, 0)] & (out >= 0)
        out[~alive] = -1
        return out

    # search -------------------------------------------------------------------------------------

    def visible(self, view: View) -> tuple[Mask, int]:
        """The memories ``view`` sees (a mask over the ordinals) and BM25's ``N``: the statement
        counts the owner's memories of the session and agent (its ``own`` branch), while the
        matches also take the owner's global memories of other sessions or agents."""
        static = self._static_part(view)
        n, c = self.size, self.cols
        if static.earliest_expiry > view.now_us and static.earliest_created > view.created_after_us:
            mask, documents = static.mask, static.documents  # no memory is expired or too old
        else:
            timely = (c["expires"][:n] > view.now_us) & (c["created"][:n] > view.created_after_us)
            own = static.own & timely
            mask = np.zeros(len(self.alive), dtype=np.bool_)
            mask[:n] = own | (static.seen_global & timely)
            documents = int(own.sum())
        self._seen = (self.generation, view, mask)
        return mask, documents

    def _static_part(self, view: View) -> _Static:
        """What ``visible`` reads that does not depend on the time, kept while nothing is written and
        the request's types, session and agent are the same (the time differs every request)."""
        key = (self.generation, view.types, view.session_id, view.agent_id)
        kept = self._static
        if kept is not None and kept.key == key:
            return kept
        n, c = self.size, self.cols
        seen = self.alive[:n].copy()
        if view.types is not None:
            kinds = [self.names[t] for t in view.types if t in self.names]
            seen &= np.isin(c["kind"][:n], np.array(kinds, dtype=np.int32))
        own = seen.copy()
        for column, name in (("session", view.session_id), ("agent", view.agent_id)):
            if name is not None:
                own &= c[column][:n] == self.names.get(name, _UNSEEN)
        seen_global = seen & c["glob"][:n]
        mask = np.zeros(len(self.alive), dtype=np.bool_)
        mask[:n] = own | seen_global
        self._static = _Static(
            key,
            own,
            seen_global,
            mask,
            int(own.sum()),
            int(c["expires"][:n].min()) if n else int(NEVER),
            int(c["created"][:n].min()) if n else int(NEVER),
        )
        return self._static

    def seen_by(self, view: View) -> Mask:
        """``visible(view)``'s mask, kept from the last call while nothing was written since."""
        kept = self._seen
        if kept is not None and kept[0] == self.generation and kept[1] == view:
            return kept[2]
        return self.visible(view)[0]

    def postings(self, key: int, seen: Mask | None = None) -> tuple[I32, npt.NDArray[Any]]:
        """One lexeme's postings (main slice plus tail) among ``seen`` (None: the live memories)."""
        if key < len(self.offsets) - 1:
            a, b = self.offsets[key], self.offsets[key + 1]
            docs, tfs = self.docs[a:b], self.tfs[a:b]
        else:
            docs, tfs = np.empty(0, dtype=np.int32), np.empty(0, dtype=np.uint8)
        if (extra := self.tail.get(key)) is not None:
            docs = np.concatenate((docs, np.frombuffer(extra[0], dtype=np.int32)))
            tfs = np.concatenate((tfs, np.frombuffer(extra[1], dtype=np.uint16)))
        if seen is not None or self.dead:
            keep = (self.alive if seen is None else seen)[docs]
            docs, tfs = docs[keep], tfs[keep]
        return docs, tfs

    def search(self, lexemes: Iterable[str], limit: int, view: View | None = None) -> tuple[list[Hit], int]:
        """The top ``limit`` memories holding any of ``lexemes`` among those ``view`` sees (None:
        every live memory; BM25, ties newest first, then id) and the most question-lexeme
        occurrences any of them holds (the statement's cover)."""
        scored = self._scored(lexemes, view)
        if scored is None:
            return [], 0
        cand, got, occurrences = scored
        return self._top(cand, got, limit), occurrences

    def search_keeping(
        self, lexemes: Iterable[str], limit: int, view: View | None = None
    ) -> tuple[list[Hit], int, Matches | None]:
        """``search``, and every match scored, for ``top_within`` (no copy: the arrays are the search's own)."""
        scored = self._scored(lexemes, view)
        if scored is None:
            return [], 0, None
        cand, got, occurrences = scored
        return self._top(cand, got, limit), occurrences, Matches(self.generation, cand, got)

    def search_within(
        self, lexemes: Iterable[str], limit: int, view: View | None, ranges: Sequence[tuple[int, int]]
    ) -> list[Hit]:
        """``search``'s top ``limit`` among the memories created within one of ``ranges`` (µs,
        start inclusive, end exclusive): the same scores (BM25 over every memory ``view`` sees), the
        same order; the time-window candidates (``logic.time_window``)."""
        if not ranges:
            return []
        scored = self._scored(lexemes, view)
        if scored is None:
            return []
        return self._within(scored[0], scored[1], limit, ranges)

    def top_within(self, matches: Matches, limit: int, ranges: Sequence[tuple[int, int]]) -> list[Hit] | None:
        """``search_within`` from a search's kept ``matches`` (no scoring again); None when the index
        was written since (its ordinals may have moved)."""
        if matches.generation != self.generation:
            return None
        return self._within(matches.ordinals, matches.scores, limit, ranges) if ranges else []

    def _within(self, cand: I32, got: F64, limit: int, ranges: Sequence[tuple[int, int]]) -> list[Hit]:
        created = self.created[cand]
        inside = np.zeros(len(cand), dtype=np.bool_)
        for start, end in ranges:
            inside |= (created >= start) & (created < end)
        return self._top(cand[inside], got[inside], limit)

    def _scored(self, lexemes: Iterable[str], view: View | None) -> tuple[I32, F64, int] | None:
        """Every memory holding one of ``lexemes`` that ``view`` sees, its BM25 score and the most
        question-lexeme occurrences one holds; None when none does."""
        keys = sorted({self.vocab[x] for x in set(lexemes) if x in self.vocab})
        if not keys:
            return None
        seen: Mask | None = None
        if view is None:
            n = float(self.size - self.dead)
        else:
            seen, documents = self.visible(view)
            n = float(documents)
        scores, occ = self._scores, self._occ
        touched: list[I32] = []
        for key in keys:
            docs, tfs = self.postings(key, seen)
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
            return None
        cand = self._union(touched)
        got, occurrences = scores[cand], int(occ[cand].max())
        scores[cand], occ[cand] = 0.0, 0
        return cand, got, occurrences

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
        hi, lo = self.hi, self.lo
        # lexsort: the last key sorts first
        order = np.lexsort((lo[cand], hi[cand], -self.created[cand], -got))[:limit]
        picked = cand[order]
        # plain Python numbers at once: reading numpy scalars one by one costs more than the sort
        return list(map(Hit, uuid_texts(hi[picked], lo[picked]), got[order].tolist()))


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
            ranked.append((-s, -d.created_us, d.id.bytes, Hit(str(d.id), s)))
    ranked.sort(key=lambda r: r[:3])
    return [r[3] for r in ranked[:limit]]
