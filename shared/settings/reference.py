"""Describe settings Structs for the configuration reference: name, type, default, meaning.

The meaning of a field is its comment in the source, as Sphinx reads attribute comments: a
``#:`` block on the lines above the field, else the comment at the end of its line. Types and
defaults come from ``msgspec.inspect`` (ranges from ``msgspec.Meta`` constraints). Rows are
rendered as Markdown tables by ``table``. Pure: reads source files, no other I/O.
"""

from __future__ import annotations

import ast
import inspect
import io
import tokenize
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import msgspec
from msgspec import inspect as mi

#: a field -> the name it is set by (``MEMORYD_NATS_URL``, ``sleepIdleMinutes``)
Namer = Callable[[mi.Field], str]


@dataclass(frozen=True)
class Row:
    name: str
    type: str
    default: str
    meaning: str


@cache
def _comments(path: Path) -> dict[str, dict[str, str]]:
    """``{class name: {field: meaning}}`` for every class of a module, from its comments."""
    source = path.read_text()
    lines: dict[int, str] = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            lines[tok.start[0]] = tok.string
    out: dict[str, dict[str, str]] = {}
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ClassDef):
            continue
        fields: dict[str, str] = {}
        for stmt in node.body:
            if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
                continue
            block: list[str] = []
            line = stmt.lineno - 1
            while lines.get(line, "").startswith("#:"):
                block.insert(0, lines[line][2:].strip())
                line -= 1
            trailing = lines.get(stmt.end_lineno or stmt.lineno, "")
            text = " ".join(block) if block else trailing.lstrip("#").strip()
            if text:
                fields[stmt.target.id] = text
        out[node.name] = fields
    return out


def meanings(cls: type[msgspec.Struct]) -> dict[str, str]:
    """Each field's meaning, inherited fields included (the nearest class's comment wins)."""
    out: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if klass is msgspec.Struct or not issubclass(klass, msgspec.Struct):
            continue
        out.update(_comments(Path(inspect.getfile(klass))).get(klass.__name__, {}))
    return out


def _bounds(t: Any) -> list[str]:
    out = []
    for attr, sign in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
        value = getattr(t, attr, None)
        if value is not None:
            out.append(f"{sign} {value}")
    return out


def type_text(t: mi.Type) -> str:
    """``int (>= 1, <= 1000)``, ``one of `a`, `b```, ``str or unset``."""
    if isinstance(t, mi.UnionType):
        kinds = [k for k in t.types if not isinstance(k, mi.NoneType)]
        text = " or ".join(type_text(k) for k in kinds)
        return f"{text} or unset" if len(kinds) < len(t.types) else text
    if isinstance(t, mi.LiteralType):
        return "one of " + ", ".join(f"`{v}`" for v in t.values)
    if isinstance(t, mi.BoolType):
        return "bool"
    if isinstance(t, mi.IntType | mi.FloatType):
        bounds = _bounds(t)
        kind = "int" if isinstance(t, mi.IntType) else "float"
        return f"{kind} ({', '.join(bounds)})" if bounds else kind
    if isinstance(t, mi.StrType):
        extra = [f"length {t.min_length}-{t.max_length or '...'}"] if t.min_length else []
        if t.pattern:
            extra.append("pattern `" + t.pattern.replace("|", "\\|") + "`")
        return f"str ({', '.join(extra)})" if extra else "str"
    return type(t).__name__.removesuffix("Type").lower()


def default_text(field: mi.Field) -> str:
    value = field.default
    if value is msgspec.NODEFAULT or value is None:
        return "–"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, str):
        return f"`{value}`" if value else '`""`'
    return f"`{value}`"


def rows(cls: type[msgspec.Struct], namer: Namer, defaults: Callable[[mi.Field], str] = default_text) -> list[Row]:
    """One row per field of ``cls``; ``ValueError`` for a field without a comment."""
    info = mi.type_info(cls)
    assert isinstance(info, mi.StructType)
    meaning = meanings(cls)
    missing = [f.name for f in info.fields if f.name not in meaning]
    if missing:
        raise ValueError(f"{cls.__qualname__}: no comment says what {', '.join(missing)} mean(s)")
    return [Row(namer(f), type_text(f.type), defaults(f), meaning[f.name]) for f in info.fields]


def table(found: Iterable[Row]) -> str:
    lines = ["| name | type | default | meaning |", "|---|---|---|---|"]
    for r in found:
        meaning = r.meaning.replace("|", "\\|")
        lines.append(f"| `{r.name}` | {r.type} | {r.default} | {meaning} |")
    return "\n".join(lines)
