"""A mem0 export read as import lines: the field mapping, stable ids and keys, the owner rule,
and bad entries named by position."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

import msgspec
import pytest

from memoryd.cli import mem0_export
from memoryd.schemas import MemoryRecord

NOW = datetime(2026, 3, 1, tzinfo=UTC)
ENTRY = {
    "id": "0b9e2c2a-3f1e-4c59-9a38-2a1f7e1b6c11",
    "memory": "Likes tea",
    "hash": "abc",
    "metadata": {"topic": "food"},
    "created_at": "2024-07-20T01:23:45-07:00",
    "updated_at": None,
    "user_id": "alice",
    "agent_id": "bot",
    "run_id": "r1",
    "role": "user",
}


def _records(by_owner: dict[str, list[str]]) -> dict[str, list[MemoryRecord]]:
    return {o: [msgspec.json.decode(line, type=MemoryRecord) for line in lines] for o, lines in by_owner.items()}


def test_entries_map_to_records() -> None:
    by_owner, errors = mem0_export.import_lines(json.dumps([ENTRY]), NOW)
    assert errors == []
    ((rec,),) = _records(by_owner).values()
    assert (rec.id, rec.owner, rec.content, rec.session_id) == (ENTRY["id"], "alice", "Likes tea", "r1")
    assert (rec.key, rec.source, rec.state, rec.memory_type) == (f"mem0:{ENTRY['id']}", "import", "active", "factual")
    assert rec.metadata == {"topic": "food"} and rec.agent_id == "bot"  # the column, not a metadata key
    assert rec.created_at == rec.updated_at == datetime(2024, 7, 20, 8, 23, 45, tzinfo=UTC)


def test_results_wrapper_owner_override_and_stable_ids() -> None:
    other = {"id": "m-7", "memory": "Runs", "user_id": "bob"}
    doc = json.dumps({"results": [ENTRY, other]})
    assert set(mem0_export.import_lines(doc, NOW)[0]) == {"alice", "bob"}
    by_owner, _ = mem0_export.import_lines(doc, NOW, owner="carol")
    records = _records(by_owner)["carol"]
    assert records[1].id == str(uuid.uuid5(mem0_export.MEM0_NAMESPACE, "m-7"))
    assert records[1].created_at == NOW and records[1].metadata == {}
    assert mem0_export.import_lines(doc, NOW, owner="carol")[0] == by_owner  # the same lines each time


def test_bad_entries_are_named_by_position() -> None:
    doc = [ENTRY, {"id": "x", "memory": 3}, {"id": "y", "memory": "m"}, {"id": "z", "memory": "m", "user_id": "a.b"}]
    by_owner, errors = mem0_export.import_lines(json.dumps(doc), NOW)
    assert list(by_owner) == ["alice"]
    assert [e.line for e in errors] == [2, 3, 4]
    assert "$.memory" in errors[0].error and "--owner" in errors[1].error and "'a.b'" in errors[2].error
    for bad in ("{", '{"memories": []}', "3"):
        with pytest.raises(ValueError):
            mem0_export.import_lines(bad, NOW)
