"""Hypothesis strategies for hostile payloads, shared by the fuzz tests of every subject and RPC.

Each strategy yields raw bytes a misbehaving or malicious client could send: random bytes,
truncated or deeply nested JSON, huge strings, wrong types, extra fields, unicode edge
cases (lone surrogates, NUL, RTL marks, combining characters), and valid messages with
one field broken.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
from hypothesis import strategies as st

UNICODE_EDGES = [
    "\x00",
    "\ud800",
    "\udfff",
    "\u202e",
    "\ufeff",
    "e\u0301" * 50,
    "😀" * 100,
    "\u0000abc",
    "{{x}}",
    "'; DROP TABLE memories; --",
    "a & !b | c:*",
    "<script>alert(1)</script>",
    "مرحبا بالعالم",
    "日本語のテキスト",
    "\n\t\r   ",
]

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=50),
    st.sampled_from(UNICODE_EDGES),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=10), inner, max_size=4)),
    max_leaves=20,
)


def _dumps(value: Any) -> bytes:
    """JSON with lone surrogates escaped rather than refused (a hostile client may send them)."""
    return json.dumps(value, ensure_ascii=True).encode()


def deep_nesting(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def mutate_fields(example: dict[str, Any]) -> st.SearchStrategy[bytes]:
    """A valid message with one field replaced, removed, or an extra field added."""
    keys = sorted(example)

    def replace(key: str, value: Any) -> bytes:
        return _dumps({**example, key: value})

    def drop(key: str) -> bytes:
        return _dumps({k: v for k, v in example.items() if k != key})

    return st.one_of(
        st.builds(replace, st.sampled_from(keys), json_values),
        st.builds(drop, st.sampled_from(keys)),
        st.builds(lambda k, v: _dumps({**example, k: v}), st.text(min_size=1, max_size=20), json_values),
    )


def hostile_payloads(example: msgspec.Struct) -> st.SearchStrategy[bytes]:
    """Every kind of bad input for a message shaped like ``example``."""
    valid = json.loads(msgspec.json.encode(example))
    encoded = _dumps(valid)
    return st.one_of(
        st.binary(max_size=200),
        st.builds(lambda n: encoded[:n], st.integers(min_value=0, max_value=max(0, len(encoded) - 1))),
        st.builds(deep_nesting, st.integers(min_value=100, max_value=5000)),
        st.builds(lambda v: _dumps(v), json_values),
        mutate_fields(valid),
        st.builds(
            lambda key, s: _dumps({**valid, key: s}), st.sampled_from(sorted(valid)), st.sampled_from(UNICODE_EDGES)
        ),
        st.just(_dumps({**valid, **{k: "x" * 200_000 for k in valid if isinstance(valid[k], str)}})),
    )
