"""``fetch_rows`` builds each ``MemoryRow`` positionally from its record and sends its ids as the
text of one ``uuid[]``: the column order must be the struct's field order, and the ids text must
hold each id once, in order."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from services.retrieve.adapters.postgres import _ROW_NAMES, _uuid_array
from services.retrieve.logic.plan import MemoryRow

A, B, C = (f"00000000-0000-4000-8000-00000000000{i}" for i in range(3))


def test_the_rows_columns_are_memory_rows_fields_in_order() -> None:
    column_of = {"memory_type": "type", "metadata_json": "metadata"}  # where a field's name is not its column's
    fields = MemoryRow.__struct_fields__
    assert [column_of.get(f, f) for f in fields[: len(_ROW_NAMES)]] == list(_ROW_NAMES)
    assert fields[len(_ROW_NAMES) :] == ("turn",)  # the one column only ``turns=True`` adds
    at = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    record = (A, "likes tea", "factual", at, "s1", "global", '{"speaker": "Ann"}', "planner", 4)
    row = MemoryRow(*record)
    assert (row.id, row.content, row.memory_type, row.created_at) == (A, "likes tea", "factual", at)
    assert (row.session_id, row.scope, row.speaker, row.agent_id, row.turn) == ("s1", "global", "Ann", "planner", 4)
    assert row.metadata == {"speaker": "Ann"}
    assert MemoryRow(*record[:8]).turn is None  # a plain read has no turn column
    assert (row.created, row.day) == (at, at.date())


def test_a_fetched_time_in_microseconds_reads_as_the_same_datetime_and_day() -> None:
    at = datetime(2026, 1, 2, 23, 59, 59, 999_999, tzinfo=UTC)
    micros = (at - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)
    row = MemoryRow(A, "likes tea", "factual", micros)
    assert (row.created, row.day) == (at, date(2026, 1, 2))
    assert row.created.tzinfo is UTC
    early = MemoryRow(A, "x", "factual", -1)  # floor division: before the epoch is the day before
    assert (early.created, early.day) == (datetime(1969, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC), date(1969, 12, 31))


def test_ids_go_as_one_uuid_array_text_each_once_in_order() -> None:
    assert _uuid_array([B, A, B, C, A]) == "{" + f"{B},{A},{C}" + "}"
    assert _uuid_array([]) == "{}"
