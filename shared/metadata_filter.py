"""Metadata filters of search and list: parsed from JSON, then compiled to SQL over a jsonb column.

    {"project": "web"}                            the value equals "web"
    {"project": {"in": ["web", "api"]}}           the value is one of those
    {"project": {"eq": "web"}, "lang": "en"}      several keys: all must hold
    {"OR": [{"project": "web"}, {"lang": "en"}]}  any of; "AND": all of (nested up to 4 deep)

Values are JSON scalars (string, number, boolean, null); each condition compiles to a jsonb
containment test (``metadata @> {"key": value}``), so values travel as bind parameters only.
Pure: no I/O, no database driver.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from memoryd.errors import ValidationFailed

MAX_DEPTH = 4
MAX_CONDITIONS = 32  # key conditions in one filter
MAX_VALUES = 100  # values of one "in"
MAX_KEY_CHARS = 200
_SCALARS = (str, int, float, bool, type(None))


@dataclass(frozen=True)
class OneOf:
    """``key`` holds one of ``values``."""

    key: str
    values: tuple[Any, ...]


@dataclass(frozen=True)
class Both:
    """Every part holds (``all_``) or at least one does."""

    parts: tuple[Filter, ...]
    all_: bool = True


Filter = OneOf | Both


def parse(raw: Any, path: str = "$.filters") -> Filter:
    """A filter from its JSON form; ``ValidationFailed`` names the offending path."""
    count = [0]
    return _parse(raw, path, 1, count)


def _fail(problem: str, path: str) -> ValidationFailed:
    return ValidationFailed(f"{problem} - at `{path}`", path)


def _parse(raw: Any, path: str, depth: int, count: list[int]) -> Filter:
    if depth > MAX_DEPTH:
        raise _fail(f"filters nest at most {MAX_DEPTH} deep", path)
    if not isinstance(raw, dict) or not raw:
        raise _fail("a filter is a non-empty object", path)
    parts: list[Filter] = []
    for key, value in raw.items():
        here = f"{path}.{key}"
        if key in ("AND", "OR"):
            if not isinstance(value, list) or not value:
                raise _fail(f"{key} takes a non-empty list of filters", here)
            inner = tuple(_parse(v, f"{here}[{i}]", depth + 1, count) for i, v in enumerate(value))
            parts.append(Both(inner, all_=key == "AND"))
            continue
        if not isinstance(key, str) or not key or len(key) > MAX_KEY_CHARS or "\x00" in key:
            raise _fail(f"a metadata key is 1..{MAX_KEY_CHARS} characters without NUL", here)
        count[0] += 1
        if count[0] > MAX_CONDITIONS:
            raise _fail(f"at most {MAX_CONDITIONS} conditions in one filter", here)
        parts.append(OneOf(key, _values(value, here)))
    return parts[0] if len(parts) == 1 else Both(tuple(parts))


def _values(value: Any, path: str) -> tuple[Any, ...]:
    if isinstance(value, dict):
        if len(value) != 1 or next(iter(value)) not in ("eq", "in"):
            raise _fail('an operator object is {"eq": value} or {"in": [values]}', path)
        op, operand = next(iter(value.items()))
        if op == "eq":
            return (_scalar(operand, f"{path}.eq"),)
        if not isinstance(operand, list) or not 1 <= len(operand) <= MAX_VALUES:
            raise _fail(f'"in" takes a list of 1..{MAX_VALUES} values', f"{path}.in")
        return tuple(_scalar(v, f"{path}.in[{i}]") for i, v in enumerate(operand))
    return (_scalar(value, path),)


def _scalar(value: Any, path: str) -> Any:
    if not isinstance(value, _SCALARS) or (isinstance(value, str) and "\x00" in value):
        raise _fail("a filter value is a string, number, boolean or null", path)
    return value


def to_sql(f: Filter, column: str, param: Callable[[Any], str]) -> str:
    """A boolean SQL expression over the jsonb ``column``; ``param(value)`` adds a bind
    parameter (a dict, encoded as jsonb by the pool) and returns its reference."""
    if isinstance(f, OneOf):
        tests = [f"{column} @> {param({f.key: v})}::jsonb" for v in f.values]
        return tests[0] if len(tests) == 1 else "(" + " OR ".join(tests) + ")"
    joined = (" AND " if f.all_ else " OR ").join(to_sql(p, column, param) for p in f.parts)
    return f"({joined})"
