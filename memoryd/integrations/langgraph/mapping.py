"""How a LangGraph item maps onto a memoryd memory and back, as pure functions (no I/O).

An item ``(namespace, key, value)`` is one memory of the owner ``owner_of(namespace)``, upserted
by ``memory_key(namespace, key)``; its metadata holds the namespace (whole and per label, so
prefix filters are exact), the key, the value and whether it is indexed. ``content_of`` picks
the text memoryd embeds; ``matches`` and ``select_namespaces`` are LangGraph's value filter and
namespace listing, applied to what the gateway returned.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from langgraph.store.base.embed import get_text_at_path

from memoryd.errors import ValidationFailed
from memoryd.schemas.base import MAX_KEY_LEN

MARK = "langgraph_store"  # true on every memory written through the store
NS = "langgraph_ns"  # the namespace, labels joined by "." (a LangGraph label holds no period)
DEPTH = "langgraph_depth"
KEY = "langgraph_key"
VALUE = "langgraph_value"
INDEXED = "langgraph_indexed"
#: The value fields used as the memory's text when no index fields are configured, in order.
TEXT_FIELDS = ("content", "text", "memory")
#: A filter holds at most 32 conditions (the gateway's limit): the mark, the depth and the labels.
MAX_DEPTH = 30
_OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")


def label_key(i: int) -> str:
    """The metadata key of the namespace's ``i``-th label."""
    return f"{NS}.{i}"


def check_namespace(namespace: Sequence[str], path: str = "$.namespace") -> tuple[str, ...]:
    """The namespace as a tuple; labels are non-empty strings without "." or NUL."""
    labels = tuple(namespace)
    if len(labels) > MAX_DEPTH:
        raise ValidationFailed.at(path, f"a namespace has at most {MAX_DEPTH} labels")
    for i, label in enumerate(labels):
        if not isinstance(label, str) or not label or "." in label or "\x00" in label:
            raise ValidationFailed.at(f"{path}[{i}]", f"a namespace label is a non-empty string without '.': {label!r}")
    return labels


def label_at(namespace: Sequence[str], position: int | None) -> str | None:
    """The namespace's (or prefix's) label at ``position``; None when it has none there, or a
    ``"*"`` wildcard, or ``position`` is None."""
    if position is not None and len(namespace) > position and namespace[position] != "*":
        return namespace[position]
    return None


def owner_of(namespace: Sequence[str], owner_label: int | None, default: str | None) -> str | None:
    """The memoryd owner of a namespace (or of a prefix): its label at ``owner_label`` when it has
    one (``("memories", "alice")`` with ``owner_label=1`` is ``alice``), else ``default`` (None:
    the API key's own owner). A ``"*"`` wildcard there names no owner."""
    found = label_at(namespace, owner_label)
    return default if found is None else found


def memory_key(namespace: Sequence[str], key: str) -> str:
    """The memory's upsert key: the namespace and the item's key, so one key in two namespaces
    is two memories; a key longer than memoryd's limit is hashed."""
    if not isinstance(key, str):
        raise ValidationFailed.at("$.key", f"an item's key is a string, not {type(key).__name__}")
    readable = "lg:" + json.dumps([*namespace, key], ensure_ascii=False, separators=(",", ":"))
    if len(readable) <= MAX_KEY_LEN:
        return readable
    return "lg#" + hashlib.sha256(readable.encode()).hexdigest()


def value_json(value: Mapping[str, Any]) -> str:
    """The value as JSON text (sorted keys, as LangGraph embeds ``"$"``); not JSON: ``ValidationFailed``."""
    try:
        return json.dumps(dict(value), sort_keys=True, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValidationFailed.at("$.value", f"the value is not a JSON object: {exc}") from None


def content_of(value: Mapping[str, Any], fields: Sequence[str] | None) -> tuple[str, bool]:
    """The text memoryd embeds, and whether the item is indexed (searchable by ``query``).

    ``fields`` (LangGraph paths such as ``"text"``, ``"facts[*]"``, ``"$"``): the texts at those
    paths, one per line. None: the value's first non-empty ``content``/``text``/``memory`` string,
    else its JSON. Nothing at the fields: the JSON, not indexed."""
    if fields is None:
        for name in TEXT_FIELDS:
            text = value.get(name)
            if isinstance(text, str) and text.strip():
                return text, True
        return value_json(value), True
    texts = [t for path in fields for t in get_text_at_path(dict(value), path) if t.strip()]
    if texts:
        return "\n".join(texts), True
    return value_json(value), False


def metadata_of(namespace: Sequence[str], key: str, value: Mapping[str, Any], indexed: bool) -> dict[str, Any]:
    """The memory's metadata: everything needed to read the item back and to find it."""
    labels = {label_key(i): label for i, label in enumerate(namespace)}
    return {
        MARK: True,
        NS: ".".join(namespace),
        DEPTH: len(namespace),
        **labels,
        KEY: key,
        VALUE: dict(value),
        INDEXED: indexed,
    }


def prefix_filter(prefix: Sequence[str], columns: Collection[int] = ()) -> dict[str, Any]:
    """The gateway filter of memories whose namespace starts with ``prefix`` (``"*"`` matches any
    label); the labels at ``columns`` are left to the memory's own columns (agent, session)."""
    conditions: dict[str, Any] = {MARK: True}
    for i, label in enumerate(prefix):
        if label != "*" and i not in columns:
            conditions[label_key(i)] = label
    return conditions


def item_filter(namespace: Sequence[str], keys: Iterable[str]) -> dict[str, Any]:
    """The gateway filter of the items with these keys in exactly this namespace."""
    wanted = sorted(set(keys))
    return {MARK: True, NS: ".".join(namespace), KEY: wanted[0] if len(wanted) == 1 else {"in": wanted}}


@dataclass(frozen=True)
class Stored:
    """An item as read back from a memory's metadata and timestamps."""

    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    created_at: datetime
    updated_at: datetime


def stored_of(metadata: Mapping[str, Any], created_at: datetime, updated_at: datetime) -> Stored | None:
    """The item a memory holds, or None when the memory was not written through the store."""
    ns, key, value = metadata.get(NS), metadata.get(KEY), metadata.get(VALUE)
    if metadata.get(MARK) is not True or not isinstance(ns, str) or not isinstance(key, str):
        return None
    if not isinstance(value, dict):
        return None
    return Stored(tuple(ns.split(".")), key, value, created_at, updated_at)


# --- LangGraph's filter and namespace listing --------------------------------------------------
def matches(value: Mapping[str, Any], conditions: Mapping[str, Any] | None) -> bool:
    """Whether ``value`` meets LangGraph's ``filter``: each field equals the given value (objects
    and lists compared member by member) or meets its operators (``$eq $ne $gt $gte $lt $lte``)."""
    if conditions is not None and not isinstance(conditions, Mapping):
        raise ValidationFailed.at("$.filter", f"a filter is an object of value fields, not {conditions!r}")
    return not conditions or all(_holds(value.get(k), v, f"$.filter.{k}") for k, v in conditions.items())


def _holds(actual: Any, wanted: Any, path: str) -> bool:
    if isinstance(wanted, Mapping):
        if any(isinstance(k, str) and k.startswith("$") for k in wanted):
            return all(_operator(actual, op, operand, f"{path}.{op}") for op, operand in wanted.items())
        if not isinstance(actual, Mapping):
            return False
        return all(_holds(actual.get(k), v, f"{path}.{k}") for k, v in wanted.items())
    if isinstance(wanted, (list, tuple)):
        return (
            isinstance(actual, (list, tuple))
            and len(actual) == len(wanted)
            and all(_holds(a, w, f"{path}[{i}]") for i, (a, w) in enumerate(zip(actual, wanted, strict=True)))
        )
    return bool(actual == wanted)


def _operator(actual: Any, op: str, operand: Any, path: str) -> bool:
    if op not in _OPERATORS:
        raise ValidationFailed.at(path, f"unknown filter operator {op!r} (one of {', '.join(_OPERATORS)})")
    if op == "$eq":
        return bool(actual == operand)
    if op == "$ne":
        return bool(actual != operand)
    if not _number(operand):
        raise ValidationFailed.at(path, f"{op} compares with a number, not {operand!r}")
    if not _number(actual):
        return False
    a, b = float(actual), float(operand)
    return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def namespace_matches(namespace: Sequence[str], conditions: Iterable[tuple[str, Sequence[str]]]) -> bool:
    """Whether a namespace meets every ``(match_type, path)`` condition ("prefix" or "suffix"; ``"*"`` any label)."""
    for match_type, path in conditions:
        if len(namespace) < len(path):
            return False
        if match_type == "prefix":
            pairs = zip(namespace, path, strict=False)
        elif match_type == "suffix":
            pairs = zip(reversed(namespace), reversed(path), strict=False)
        else:
            raise ValidationFailed.at("$.match_conditions", f"a match type is prefix or suffix, not {match_type!r}")
        if any(p != "*" and n != p for n, p in pairs):
            return False
    return True


def select_namespaces(
    namespaces: Iterable[tuple[str, ...]],
    conditions: Iterable[tuple[str, Sequence[str]]],
    max_depth: int | None,
    limit: int,
    offset: int,
) -> list[tuple[str, ...]]:
    """LangGraph's ``list_namespaces``: the matching namespaces cut to ``max_depth`` labels,
    distinct, sorted, then ``offset`` and ``limit``."""
    conditions = list(conditions)
    kept = {ns[:max_depth] if max_depth is not None else ns for ns in namespaces if namespace_matches(ns, conditions)}
    return sorted(kept)[offset : offset + limit]
