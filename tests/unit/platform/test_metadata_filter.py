"""Metadata filters: what parses (and the path of what does not) and the SQL each compiles to."""

from __future__ import annotations

from typing import Any

import pytest

from memoryd.errors import ValidationFailed
from shared.metadata_filter import MAX_CONDITIONS, Both, OneOf, parse, to_sql


def _sql(raw: dict[str, Any]) -> tuple[str, list[Any]]:
    args: list[Any] = []

    def param(value: Any) -> str:
        args.append(value)
        return f"${len(args)}"

    return to_sql(parse(raw), "m.metadata", param), args


def test_equality_in_and_or_compile_to_containment_tests() -> None:
    assert _sql({"project": "web"}) == ("m.metadata @> $1::jsonb", [{"project": "web"}])
    assert _sql({"n": {"in": [1, 2]}}) == (
        "(m.metadata @> $1::jsonb OR m.metadata @> $2::jsonb)",
        [{"n": 1}, {"n": 2}],
    )
    sql, args = _sql({"OR": [{"a": True}, {"AND": [{"b": None}, {"c": {"eq": "x"}}]}]})
    assert sql == "(m.metadata @> $1::jsonb OR (m.metadata @> $2::jsonb AND m.metadata @> $3::jsonb))"
    assert args == [{"a": True}, {"b": None}, {"c": "x"}]
    assert parse({"a": 1, "b": 2}) == Both((OneOf("a", (1,)), OneOf("b", (2,))))


@pytest.mark.parametrize(
    ("raw", "path"),
    [
        ({}, "$.filters"),
        ({"a": [1]}, "$.filters.a"),
        ({"a": {"gt": 1}}, "$.filters.a"),
        ({"a": {"in": []}}, "$.filters.a.in"),
        ({"a": {"in": [{"x": 1}]}}, "$.filters.a.in[0]"),
        ({"OR": []}, "$.filters.OR"),
        ({"OR": [{"a": 1}, "b"]}, "$.filters.OR[1]"),
        ({"a": "nul\x00"}, "$.filters.a"),
        ({"AND": [{"AND": [{"AND": [{"AND": [{"a": 1}]}]}]}]}, "$.filters.AND[0].AND[0].AND[0].AND[0]"),
        ({f"k{i}": i for i in range(MAX_CONDITIONS + 1)}, f"$.filters.k{MAX_CONDITIONS}"),
    ],
)
def test_bad_filters_name_their_path(raw: Any, path: str) -> None:
    with pytest.raises(ValidationFailed) as bad:
        parse(raw)
    assert bad.value.field == path and f"at `{path}`" in bad.value.description
