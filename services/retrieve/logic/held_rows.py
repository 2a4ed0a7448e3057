"""A search's rows from a held owner's index, as ``adapters.postgres.fetch_rows`` reads them (pure).

``Turns`` keeps every stored chat turn of the owner (any state: a turn counts as it was stored)
as sorted keys (session, ``created_at``, id), so a turn's index among them differs from another
turn's of its session by the number of turns between them. ``rows`` builds the candidates'
``MemoryRow`` from an ``OwnerIndex`` and those positions, with ``_rows_sql``'s ``turn`` rule; it
answers None when the index does not hold a candidate alive and visible (the statement reads them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from services.retrieve.logic.fusion import MAX_DISTANCE
from services.retrieve.logic.keyword_index import I32, I64, U64, OwnerIndex, View
from services.retrieve.logic.plan import MemoryRow

Keys = npt.NDArray[np.bytes_]
#: a turn by position: its session's code, ``created_at`` (µs, sign bit flipped so bytes sort as
#: numbers) and id, all big-endian: the bytes sort as ``(session, created_at, id)``
_KEY = np.dtype([("s", ">u4"), ("c", ">u8"), ("h", ">u8"), ("l", ">u8")])
#: the same fields led by the id, to find a turn by its id
_BY_ID = np.dtype([("h", ">u8"), ("l", ">u8"), ("s", ">u4"), ("c", ">u8")])
_SIGN = np.uint64(1 << 63)
CHAT_TURN = "chat_turn"


def _keys(dtype: np.dtype[Any], sessions: I32, created: I64, hi: U64, lo: U64) -> Keys:
    keys = np.empty(len(sessions), dtype=dtype)
    keys["s"], keys["c"] = sessions.astype(np.uint32), created.astype(np.int64).view(np.uint64) ^ _SIGN
    keys["h"], keys["l"] = hi, lo
    return keys.view(f"S{dtype.itemsize}")


class Turns:
    """The owner's chat turns of a session, in every state, ordered by ``(session, created_at, id)``."""

    def __init__(self, sessions: I32, created: I64, hi: U64, lo: U64) -> None:
        self.by_key = np.sort(_keys(_KEY, sessions, created, hi, lo))
        self.by_id = np.sort(_keys(_BY_ID, sessions, created, hi, lo))

    def __len__(self) -> int:
        return len(self.by_key)

    def nbytes(self) -> int:
        return int(self.by_key.nbytes + self.by_id.nbytes)

    def positions(self, sessions: I32, created: I64, hi: U64, lo: U64) -> I64:
        """Each turn's index among the owner's turns (the turns must be held)."""
        return np.searchsorted(self.by_key, _keys(_KEY, sessions, created, hi, lo)).astype(np.int64)

    def replace(self, hi: U64, lo: U64, sessions: I32, created: I64, add: npt.NDArray[np.bool_]) -> None:
        """The turns of ids ``(hi, lo)`` (each once) as re-read: each id's old turn goes, and where
        ``add`` its turn at ``(sessions, created)`` comes (``add`` False: no chat turn of a session)."""
        if not len(hi):
            return
        probe = np.zeros(len(hi), dtype=_BY_ID)
        probe["h"], probe["l"] = hi, lo
        at = np.minimum(np.searchsorted(self.by_id, probe.view("S28")), len(self.by_id))
        padded = np.concatenate((self.by_id, probe.view("S28")[:1]))  # a row past the end matches no id
        found = padded[at].view(_BY_ID)
        old = (at < len(self.by_id)) & (found["h"] == hi) & (found["l"] == lo)
        came = _keys(_BY_ID, sessions[add], created[add], hi[add], lo[add])
        went = padded[at[old]]
        if len(went) == len(came) and np.array_equal(np.sort(went), np.sort(came)):
            return  # every turn as it was
        gone = went.view(_BY_ID)
        keys = np.empty(len(gone), dtype=_KEY)
        for field in ("s", "c", "h", "l"):
            keys[field] = gone[field]
        self.by_key = np.delete(self.by_key, np.searchsorted(self.by_key, keys.view("S28")))
        self.by_id = np.delete(self.by_id, at[old])
        fresh = np.sort(_keys(_KEY, sessions[add], created[add], hi[add], lo[add]))
        self.by_key = np.insert(self.by_key, np.searchsorted(self.by_key, fresh), fresh)
        came = np.sort(came)
        self.by_id = np.insert(self.by_id, np.searchsorted(self.by_id, came), came)


def rows(
    index: OwnerIndex, turns: Turns | None, ids: Sequence[str], view: View, *, with_turns: bool
) -> dict[str, MemoryRow] | None:
    """The rows of ``ids`` (uuid text, each once) as ``fetch_rows`` reads them under ``view``, with
    ``turn`` when ``with_turns``; None when one of them is not held alive and visible."""
    if with_turns and turns is None:
        return None
    o = index.ordinals(ids)
    if (o < 0).any():
        return None
    if not index.seen_by(view)[o].all():
        return None
    c, n = index.cols, len(o)
    sessions, created = c["session"][o], c["created"][o]
    turn: list[int | None] = [None] * n
    if with_turns and turns is not None:  # (always held when asked: checked above)
        _turns_of(index, turns, o, sessions, created, turn)
    labels, texts, metas = index.labels, index.texts, index.metas
    return {
        x: MemoryRow(
            x,
            texts[i],
            labels[kind],
            at,
            None if session < 0 else labels[session],
            labels[scope],
            metas[i],
            None if agent < 0 else labels[agent],
            t,
        )
        for x, i, kind, at, session, scope, agent, t in zip(
            ids,
            o.tolist(),
            c["kind"][o].tolist(),
            created.tolist(),
            sessions.tolist(),
            c["scope"][o].tolist(),
            c["agent"][o].tolist(),
            turn,
            strict=True,
        )
    }


def _turns_of(index: OwnerIndex, turns: Turns, o: I64, sessions: I32, created: I64, turn: list[int | None]) -> None:
    """``_rows_sql``'s ``turn`` into ``turn``: a session's chat-turn candidates in time order, each
    the previous one's ``turn`` plus its distance among the session's turns, capped at
    ``MAX_DISTANCE + 1``; the first 0; None for a candidate alone in its session."""
    chat = index.names.get(CHAT_TURN)
    if chat is None:
        return
    c = index.cols
    pick = np.flatnonzero((c["source"][o] == chat) & (sessions >= 0))
    if len(pick) < 2:
        return
    # only a session holding two or more of them has positions to tell
    _, where, many = np.unique(sessions[pick], return_inverse=True, return_counts=True)
    pick = pick[many[where] > 1]
    if not len(pick):
        return
    q = o[pick]
    at = turns.positions(sessions[pick], created[pick], c["hi"][q], c["lo"][q])
    order = np.argsort(at, kind="stable")  # positions sort as (session, created_at, id)
    at, pick, s = at[order], pick[order], sessions[pick[order]]
    same = s[1:] == s[:-1]
    step = np.where(same, np.minimum(np.diff(at), MAX_DISTANCE + 1), 0)
    total = np.concatenate(([0], np.cumsum(step)))
    start = np.maximum.accumulate(np.where(np.concatenate(([True], ~same)), np.arange(len(at)), 0))
    value = total - total[start]
    alone = np.concatenate(([True], ~same)) & np.concatenate((~same, [True]))
    for i, v, lone in zip(pick.tolist(), value.tolist(), alone.tolist(), strict=True):
        if not lone:
            turn[i] = v
