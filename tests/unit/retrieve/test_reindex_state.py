"""``reindex_state``: what ``engine.status`` and the health check say a store searches during a reindex."""

from __future__ import annotations

from services.retrieve.adapters.postgres import StoreMeta
from services.retrieve.status import reindex_state

OLD, NEW = "local:m:384", "local:m:384:half"


def test_no_change_no_state() -> None:
    assert reindex_state(StoreMeta("pgvector", OLD, 384, None), (OLD, 384), 5, 5) is None


def test_query_vectors_of_the_old_signature_search_the_old_vectors() -> None:
    state = reindex_state(StoreMeta("pgvector", OLD, 384, NEW), (OLD, 384), 3, 10)
    assert state == {
        "from": OLD,
        "to": NEW,
        "done": 3,
        "total": 10,
        "searching": "old",
        "detail": f"reindexing to {NEW}, 3 of 10, searching the old vectors ({OLD})",
    }


def test_query_vectors_of_the_new_signature_leave_full_text_alone_and_say_so() -> None:
    state = reindex_state(StoreMeta("pgvector", OLD, 384, NEW), (NEW, 384), 3, 10)
    assert state is not None and state["searching"] == "none"
    assert state["detail"] == (
        f"reindexing to {NEW}, 3 of 10; searching no vectors: the old signature's query vectors cannot be"
        " made here, so full-text search serves until the reindex completes"
    )


def test_embed_down_and_a_store_being_filled() -> None:
    down = reindex_state(StoreMeta("pgvector", OLD, 384, NEW), None, 0, 4)
    assert down is not None and down["searching"] == "unknown"
    filling = reindex_state(StoreMeta("qdrant", None, None, NEW), (NEW, 384), 1, 4)
    assert filling is not None and filling["searching"] == "none"
    assert filling["detail"] == f"being filled with {NEW}, 1 of 4; searched once complete"
