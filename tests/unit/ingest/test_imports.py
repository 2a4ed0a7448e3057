"""Import lines: decoding, the owner's limits (no globals off the operator's subject, no
future timestamps, no oversize metadata, no deep nesting), stable ids, the "unchanged" rule."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta, timezone

import msgspec

from memoryd.schemas import MemoryRecord
from services.ingest.logic import imports as logic

WHEN = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
NOW = datetime(2026, 6, 1, tzinfo=UTC)


def _line(**fields: object) -> str:
    base: dict[str, object] = {
        "id": str(uuid.uuid4()),
        "owner": "x",
        "memory_type": "factual",
        "content": "c",
        "source": "api",
        "state": "active",
        "created_at": "2026-01-01T00:00:00Z",
        "updated_at": "2026-01-01T00:00:00Z",
        "content_hash": "h",
    }
    return json.dumps(base | fields)


def test_parse_import_numbers_bad_lines() -> None:
    text = "\n".join(
        [_line(), "", "{", _line(id="nope"), _line(content=" "), _line(key="x" * 300), _line(memory_type="z")]
    )
    records, errors = logic.parse_import(text, NOW)
    assert [n for n, _ in records] == [1]
    assert [e.line for e in errors] == [3, 4, 5, 6, 7]
    assert "UUID" in errors[1].error and "content" in errors[2].error and "key" in errors[3].error


def test_import_id_is_stable_per_owner() -> None:
    rid = str(uuid.uuid4())
    assert logic.import_id("bob", rid) == logic.import_id("bob", rid.upper())
    assert logic.import_id("bob", rid) != logic.import_id("carol", rid)


def test_record_differs_ignores_owner_source_and_timestamps() -> None:
    rec = msgspec.json.decode(_line(), type=MemoryRecord)
    moved = msgspec.structs.replace(rec, owner="y", source="import", updated_at=WHEN)
    assert not logic.record_differs(rec, moved)
    assert logic.record_differs(rec, msgspec.structs.replace(rec, content="d"))
    assert logic.record_differs(rec, msgspec.structs.replace(rec, expires_at=WHEN))
    same_instant = msgspec.structs.replace(rec, expires_at=WHEN.astimezone(timezone(timedelta(hours=3))))
    assert not logic.record_differs(msgspec.structs.replace(rec, expires_at=WHEN), same_instant)


def test_global_lines_are_refused_off_the_operators_subject() -> None:
    text = "\n".join([_line(), _line(scope="global")])
    records, errors = logic.parse_import(text, NOW)
    assert [n for n, _ in records] == [1]
    assert [e.line for e in errors] == [2] and "operator" in errors[0].error and "$.scope" in errors[0].error
    records, errors = logic.parse_import(text, NOW, operator=True)
    assert [n for n, _ in records] == [1, 2] and errors == []


def test_timestamps_in_the_future_are_refused() -> None:
    ahead = (NOW + timedelta(hours=1)).isoformat()
    skewed = (NOW + timedelta(minutes=2)).isoformat()  # inside the clock skew allowed
    text = "\n".join(
        [_line(created_at=ahead), _line(updated_at=ahead), _line(last_accessed_at=ahead), _line(created_at=skewed)]
    )
    records, errors = logic.parse_import(text, NOW)
    assert [n for n, _ in records] == [4]
    assert [e.line for e in errors] == [1, 2, 3]
    assert "created_at" in errors[0].error and "future" in errors[0].error


def test_oversize_metadata_and_deep_nesting_are_line_errors() -> None:
    big = _line(metadata={"blob": "x" * (logic.MAX_MEMORY_METADATA_BYTES + 1)})
    deep = _line().replace('"content": "c"', '"content": "c", "metadata": {"a": ' + "[" * 5000 + "]" * 5000 + "}")
    records, errors = logic.parse_import("\n".join([big, deep, _line()]), NOW)
    assert [n for n, _ in records] == [3]
    assert [e.line for e in errors] == [1, 2]
    assert "metadata" in errors[0].error and "deeper" in errors[1].error


def test_session_scope_needs_a_session_id() -> None:
    _, errors = logic.parse_import(_line(scope="session"), NOW)
    assert [e.line for e in errors] == [1] and "session_id" in errors[0].error


def test_session_and_agent_ids_are_checked_as_every_request_checks_them() -> None:
    bad = [
        _line(agent_id="a\nforged line"),
        _line(agent_id="a\x1b[2J"),
        _line(session_id="s\x85"),
        _line(agent_id="a" * 257),
        _line(session_id=""),
        _line(agent_id=7),
    ]
    good = [_line(agent_id="a" * 256, session_id="βοηθός 🤖")]
    records, errors = logic.parse_import("\n".join(bad + good), NOW)
    assert [n for n, _ in records] == [7]
    assert [(e.line, e.error.rsplit(" - at ", 1)[1]) for e in errors] == [
        (1, "`$.agent_id`"),
        (2, "`$.agent_id`"),
        (3, "`$.session_id`"),
        (4, "`$.agent_id`"),
        (5, "`$.session_id`"),
        (6, "`$.agent_id`"),
    ]
    assert errors[3].error.startswith("Expected `str` of length <= 256")
