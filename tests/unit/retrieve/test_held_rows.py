"""``held_rows``: the owner's turns kept in step by ``Turns.replace`` equal turns built afresh, and
``rows`` answers only when every candidate is held alive and visible."""

from __future__ import annotations

import random
import uuid

import numpy as np

from services.retrieve.logic.fusion import MAX_DISTANCE
from services.retrieve.logic.held_rows import Turns, rows
from services.retrieve.logic.keyword_index import Doc, OwnerIndex, View, parse_ids, uuid_texts


def _turns(table: dict[int, tuple[int, int]]) -> Turns:
    ids = list(table)
    return Turns(
        np.array([table[i][0] for i in ids], dtype=np.int32),
        np.array([table[i][1] for i in ids], dtype=np.int64),
        np.array([i >> 64 for i in ids], dtype=np.uint64),
        np.array([i & (2**64 - 1) for i in ids], dtype=np.uint64),
    )


def test_turns_replaced_in_place_equal_turns_built_afresh() -> None:
    rnd = random.Random(1)
    table = {rnd.getrandbits(128): (rnd.randrange(5), rnd.randrange(-50, 50)) for _ in range(300)}
    kept = _turns(table)
    for _ in range(60):
        changed = rnd.sample(list(table), 3) + [rnd.getrandbits(128) for _ in range(rnd.randrange(3))]
        now = {i: (rnd.randrange(6), rnd.randrange(-60, 60)) for i in changed if rnd.random() < 0.6}
        if rnd.random() < 0.3:  # re-read unchanged
            now = {i: table[i] for i in changed if i in table}
        for i in changed:
            table.pop(i, None)
        table.update(now)
        kept.replace(
            np.array([i >> 64 for i in changed], dtype=np.uint64),
            np.array([i & (2**64 - 1) for i in changed], dtype=np.uint64),
            np.array([now.get(i, (0, 0))[0] for i in changed], dtype=np.int32),
            np.array([now.get(i, (0, 0))[1] for i in changed], dtype=np.int64),
            np.array([i in now for i in changed], dtype=np.bool_),
        )
        fresh = _turns(table)
        assert kept.by_key.tolist() == fresh.by_key.tolist() and kept.by_id.tolist() == fresh.by_id.tolist()
    # positions follow (session, created_at, id): negative times included
    order = sorted(table, key=lambda i: (table[i][0], table[i][1], i))
    got = kept.positions(
        np.array([table[i][0] for i in order], dtype=np.int32),
        np.array([table[i][1] for i in order], dtype=np.int64),
        np.array([i >> 64 for i in order], dtype=np.uint64),
        np.array([i & (2**64 - 1) for i in order], dtype=np.uint64),
    )
    assert got.tolist() == list(range(len(order)))


def _doc(i: int, session: str | None, **kw: object) -> Doc:
    return Doc(uuid.UUID(int=i + 1), 1000 + i, ["w"], [1], session_id=session, source="chat_turn", **kw)  # type: ignore[arg-type]


def test_rows_carry_the_held_columns_and_turns_or_nothing() -> None:
    docs = [_doc(i, "s", content=f"turn {i}", metadata='{"speaker": "Ann"}') for i in range(6)]
    docs.append(_doc(6, None, content="a fact", scope="global", global_scope=True, type="episodic", agent_id="a1"))
    index = OwnerIndex(docs)
    # the session's turns 0..9 were stored; 6..9 are no longer held (archived): they still count
    turns = Turns(
        np.full(10, index.names["s"], dtype=np.int32),
        np.arange(1000, 1010, dtype=np.int64),
        np.zeros(10, dtype=np.uint64),
        np.arange(1, 11, dtype=np.uint64),
    )
    view = View(now_us=10**9, created_after_us=0)
    ids = [str(d.id) for d in docs]
    got = rows(index, turns, [ids[5], ids[0], ids[1], ids[6]], view, with_turns=True)
    assert got is not None
    assert {k: (r.content, r.turn, r.session_id, r.scope, r.agent_id) for k, r in got.items()} == {
        ids[0]: ("turn 0", 0, "s", "apiKey", None),
        ids[1]: ("turn 1", 1, "s", "apiKey", None),
        ids[5]: ("turn 5", 1 + MAX_DISTANCE + 1, "s", "apiKey", None),  # 4 turns on: any gap past MAX_DISTANCE
        ids[6]: ("a fact", None, None, "global", "a1"),
    }
    assert got[ids[0]].metadata_json == '{"speaker": "Ann"}' and got[ids[0]].created_at == 1000
    alone = rows(index, turns, [ids[2]], view, with_turns=True)
    assert alone is not None and alone[ids[2]].turn is None  # alone in its session
    index.delete(docs[3].id)
    assert rows(index, turns, [ids[3]], view, with_turns=False) is None  # not held alive
    assert rows(index, turns, [str(uuid.uuid4())], view, with_turns=False) is None  # never held
    assert rows(index, turns, [ids[0]], View(now_us=10**9, created_after_us=1000), with_turns=False) is None
    assert rows(index, turns, [ids[0]], View(10**9, 0, session_id="other"), with_turns=False) is None
    assert rows(index, turns, [ids[6]], View(10**9, 0, session_id="other"), with_turns=False) is not None  # global


def test_ids_are_found_by_their_text_whatever_they_share() -> None:
    rnd = random.Random(2)
    ids = [uuid.UUID(int=rnd.getrandbits(128)) for _ in range(50)]
    ids += [uuid.UUID(int=(ids[0].int >> 64 << 64) | rnd.getrandbits(64)) for _ in range(5)]  # one first half
    ids += [uuid.UUID(int=5), uuid.UUID(int=(1 << 128) - 1)]
    parsed = parse_ids([str(u) for u in ids])
    assert parsed is not None
    halves = zip(parsed[0].tolist(), parsed[1].tolist(), strict=True)
    assert [(h << 64) | lw for h, lw in halves] == [u.int for u in ids]
    bad = [str(ids[0]).upper(), str(ids[0])[:-1] + "g", str(ids[0]).replace("-", "+"), "short"]
    assert all(parse_ids([str(ids[1]), x]) is None for x in bad)
    assert parse_ids([]) is not None
    index = OwnerIndex([Doc(u, k, ["w"], [1]) for k, u in enumerate(ids)])
    assert index.ordinals([str(u) for u in ids]).tolist() == list(range(len(ids)))
    index.delete(ids[3])
    extra = uuid.UUID(int=(ids[0].int >> 64 << 64) | 7)
    index.append(Doc(ids[3], 3, ["w"], [1]))  # re-read: a new ordinal in the tail
    index.append(Doc(extra, 9, ["w"], [1]))
    got = index.ordinals([str(ids[3]), str(extra), str(ids[4]), str(uuid.UUID(int=6))])
    assert got.tolist() == [len(ids), len(ids) + 1, 4, -1]
    assert index.ordinals([str(ids[4]), bad[0]]).tolist() == [-1, -1]  # not canonical: none found
    index.compact()  # renumbered: the deleted ordinal gone, the re-read memory after the others
    n = len(ids)
    assert index.ordinals([str(u) for u in (*ids, extra)]).tolist() == [0, 1, 2, n - 1, *range(3, n - 1), n]


def test_ids_are_written_as_uuid_writes_them() -> None:
    rnd = random.Random(4)
    ids = [uuid.UUID(int=rnd.getrandbits(128)) for _ in range(300)] + [uuid.UUID(int=0), uuid.UUID(int=(1 << 128) - 1)]
    hi = np.array([u.int >> 64 for u in ids], dtype=np.uint64)
    lo = np.array([u.int & (2**64 - 1) for u in ids], dtype=np.uint64)
    assert uuid_texts(hi, lo) == [str(u) for u in ids]
    assert uuid_texts(hi[:0], lo[:0]) == []


def test_the_search_s_visibility_is_reused_only_while_nothing_was_written() -> None:
    index = OwnerIndex([_doc(i, "s", content=f"turn {i}") for i in range(4)])
    view = View(now_us=10**9, created_after_us=0)
    index.search(["w"], 10, view)  # keeps its mask
    late = _doc(9, "s", content="late")
    index.append(late)  # after the search: its mask no longer tells
    got = rows(index, None, [str(late.id)], view, with_turns=False)
    assert got is not None and got[str(late.id)].content == "late"
    index.search(["w"], 10, view)
    index.delete(late.id)
    assert rows(index, None, [str(late.id)], view, with_turns=False) is None
    index.compact()  # renumbered
    assert rows(index, None, [str(_doc(3, None).id)], view, with_turns=False) is not None
