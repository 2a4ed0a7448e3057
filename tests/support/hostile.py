"""Hypothesis strategies for hostile payloads, shared by the fuzz tests of every subject and RPC.

Each strategy yields raw bytes a misbehaving or malicious client could send: random bytes,
truncated or deeply nested JSON, huge strings, wrong types, extra fields, unicode edge
cases (lone surrogates, NUL, RTL marks, combining characters), and valid messages with
one field broken - at the top level or anywhere inside (``messages[0].content``,
``values.maxTokens``) - and payloads exactly at and one over every size cap (``capped``: text
fields at each text limit, ``metadata`` at the per-event and per-memory byte caps, whole
messages at the 4 MiB payload cap). ``embedded`` fields carry a document of their own (the JSON lines
of ``memory.import``) and get hostile documents. ``subject_tokens`` are owner tokens a
client may put in an owner-bound subject.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import msgspec
from hypothesis import strategies as st

from memoryd.schemas.base import MAX_CONTENT_CHARS, MAX_KEY_LEN, MAX_OWNER_LEN, MAX_PAYLOAD_BYTES, MAX_QUERY_CHARS
from services.ingest.logic.chat import MAX_EVENT_METADATA_BYTES, MAX_MEMORY_METADATA_BYTES

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
    "\u2028\u2029",
    "%s%n{0}${jndi:x}",
    "\\",
]
#: Long strings: just under and over the content (65,536) and query (100,000) limits.
HUGE_LENGTHS = [1_000, 65_537, 99_999, 200_000]

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
hostile_strings = st.one_of(
    st.sampled_from(UNICODE_EDGES),
    st.text(max_size=80),
    st.builds(lambda c, n: c * n, st.sampled_from(["x", "é", "😀", " "]), st.sampled_from(HUGE_LENGTHS)),
)

Path = tuple[str | int, ...]


def _dumps(value: Any) -> bytes:
    """JSON with lone surrogates escaped rather than refused (a hostile client may send them)."""
    return json.dumps(value, ensure_ascii=True).encode()


def deep_nesting(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def deep_objects(depth: int) -> bytes:
    return b'{"a":' * depth + b"1" + b"}" * depth


#: Depths around and far past the decoder's cap (memoryd.schemas.depth.MAX_JSON_DEPTH = 64)
#: and msgspec's own recursion limit, which raises RecursionError.
DEEP = (60, 65, 1_000, 100_000, 1_000_000)
_HOLE = "__hostile_hole__"


def _with_hole(doc: Any, path: Path, filler: bytes) -> bytes:
    """``doc`` with the value at ``path`` replaced by raw JSON bytes (too deep for json.dumps)."""
    return _dumps(set_at(doc, path, _HOLE)).replace(f'"{_HOLE}"'.encode(), filler, 1)


def wide_array(size: int) -> bytes:
    """A flat array of about ``size`` bytes (payloads at and over the size caps)."""
    return b"[" + b"0," * max(0, size // 2 - 1) + b"0]"


def nested_inside(example: dict[str, Any]) -> st.SearchStrategy[bytes]:
    """A valid message with one value anywhere inside made deep (arrays or objects) or wide."""
    inner = paths(example)
    fillers = st.one_of(
        st.builds(deep_nesting, st.sampled_from(DEEP)),
        st.builds(deep_objects, st.sampled_from(DEEP)),
        st.builds(wide_array, st.sampled_from([8 * 1024, 16 * 1024 + 2, 1_000_000, 4 * 1_048_576])),
    )
    return st.builds(lambda p, f: _with_hole(example, p, f), st.sampled_from(inner), fillers)


#: Text limits (characters): content, query, key, owner, session id and the list/retrieve query.
TEXT_CAPS = (MAX_CONTENT_CHARS, MAX_QUERY_CHARS, MAX_KEY_LEN, MAX_OWNER_LEN, 256, 2_000)
#: Byte caps of a ``metadata`` object (encoded compactly, as the services measure it).
METADATA_CAPS = (MAX_EVENT_METADATA_BYTES, MAX_MEMORY_METADATA_BYTES)


def at_and_over(caps: tuple[int, ...]) -> list[int]:
    return sorted({n + d for n in caps for d in (0, 1)})


def metadata_of(size: int) -> dict[str, str]:
    """An object whose compact JSON is exactly ``size`` bytes."""
    return {"pad": "m" * (size - len(b'{"pad":""}'))}


def padded_to(doc: dict[str, Any], size: int) -> bytes:
    """``doc`` with an extra string field making the message exactly ``size`` bytes."""
    head = _dumps({**doc, "zz_pad": ""})
    return head[:-2] + b"p" * (size - len(head)) + head[-2:]


def capped(example: dict[str, Any]) -> st.SearchStrategy[bytes]:
    """A valid message with one part exactly at or one over a size cap: a text field at each
    text limit, a ``metadata`` object at each metadata cap, or the whole message at the payload cap."""
    inner = paths(example)
    strings = [p for p in inner if isinstance(_get(example, p), str)]
    metadata = [p for p in inner if p[-1] == "metadata"]
    kinds = [st.builds(lambda n: padded_to(example, n), st.sampled_from(at_and_over((MAX_PAYLOAD_BYTES,))))]
    if strings:
        text = st.builds(
            lambda p, n: _dumps(set_at(example, p, "t" * n)),
            st.sampled_from(strings),
            st.sampled_from(at_and_over(TEXT_CAPS)),
        )
        kinds.append(text)
    if metadata:
        sized = st.builds(
            lambda p, n: _dumps(set_at(example, p, metadata_of(n))),
            st.sampled_from(metadata),
            st.sampled_from(at_and_over(METADATA_CAPS)),
        )
        kinds.append(sized)
    return st.one_of(*kinds)


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


def paths(value: Any, prefix: Path = ()) -> list[Path]:
    """Every path to a value inside ``value`` (dict keys and list indices), outermost first."""
    out: list[Path] = []
    items: list[tuple[str | int, Any]] = []
    if isinstance(value, dict):
        items = list(value.items())
    elif isinstance(value, list):
        items = list(enumerate(value))
    for key, child in items:
        out.append((*prefix, key))
        out.extend(paths(child, (*prefix, key)))
    return out


def _copy_to(doc: Any, path: Path) -> tuple[Any, Any]:
    """A deep copy of ``doc`` and, in it, the container that holds ``path``'s last step."""
    root = json.loads(json.dumps(doc))
    parent = root
    for step in path[:-1]:
        parent = parent[step]
    return root, parent


def set_at(doc: Any, path: Path, value: Any) -> Any:
    root, parent = _copy_to(doc, path)
    parent[path[-1]] = value
    return root


def drop_at(doc: Any, path: Path) -> Any:
    root, parent = _copy_to(doc, path)
    del parent[path[-1]]
    return root


def extra_at(doc: Any, path: Path, key: str, value: Any) -> Any:
    """``doc`` with an unknown ``key`` added to the object at ``path`` (or at the top)."""
    root = json.loads(json.dumps(doc))
    target = root
    for step in path:
        target = target[step]
    if isinstance(target, dict):
        target[key] = value
    return root


def mutate_nested(example: dict[str, Any]) -> st.SearchStrategy[bytes]:
    """A valid message with one value anywhere inside replaced, removed, or given a sibling."""
    inner = paths(example)
    objects = [p for p in [(), *inner] if isinstance(_get(example, p), dict)]
    return st.one_of(
        st.builds(lambda p, v: _dumps(set_at(example, p, v)), st.sampled_from(inner), json_values),
        st.builds(lambda p, s: _dumps(set_at(example, p, s)), st.sampled_from(inner), hostile_strings),
        st.builds(lambda p: _dumps(drop_at(example, p)), st.sampled_from(inner)),
        st.builds(
            lambda p, k, v: _dumps(extra_at(example, p, k, v)),
            st.sampled_from(objects),
            st.text(min_size=1, max_size=20),
            json_values,
        ),
    )


def _get(doc: Any, path: Path) -> Any:
    for step in path:
        doc = doc[step]
    return doc


def hostile_documents(example: msgspec.Struct) -> st.SearchStrategy[str]:
    """JSON lines of hostile messages shaped like ``example`` (mixed with the valid one)."""
    valid = msgspec.json.encode(example).decode()
    line = st.one_of(
        st.just(valid),
        hostile_payloads(example).map(lambda b: b.decode("utf-8", errors="replace")),
    )
    return st.lists(line, min_size=1, max_size=5).map("\n".join)


def hostile_payloads(
    example: msgspec.Struct, *, embedded: Mapping[str, msgspec.Struct] | None = None
) -> st.SearchStrategy[bytes]:
    """Every kind of bad input for a message shaped like ``example``.

    ``embedded`` names string fields that hold documents of their own (field -> an example
    document); those fields also get hostile documents.
    """
    valid = json.loads(msgspec.json.encode(example))
    encoded = _dumps(valid)
    kinds = [
        st.binary(max_size=200),
        st.builds(lambda n: encoded[:n], st.integers(min_value=0, max_value=max(0, len(encoded) - 1))),
        st.builds(deep_nesting, st.integers(min_value=100, max_value=5000)),
        st.builds(deep_nesting, st.sampled_from(DEEP)),
        st.builds(deep_objects, st.sampled_from(DEEP)),
        nested_inside(valid),
        st.builds(lambda v: _dumps(v), json_values),
        mutate_fields(valid),
        st.builds(
            lambda key, s: _dumps({**valid, key: s}), st.sampled_from(sorted(valid)), st.sampled_from(UNICODE_EDGES)
        ),
        st.just(_dumps({**valid, **{k: "x" * 200_000 for k in valid if isinstance(valid[k], str)}})),
        mutate_nested(valid),
        capped(valid),
    ]
    for field, doc in (embedded or {}).items():
        kinds.append(st.builds(lambda lines, f=field: _dumps({**valid, f: lines}), hostile_documents(doc)))
    return st.one_of(*kinds)


#: Owner tokens of owner-bound subjects (``mem.v1.rpc.<op>.<owner>``): anything NATS accepts
#: as one token (no space, dot or wildcard), including what the ``Owner`` pattern refuses.
subject_tokens = st.one_of(
    st.text(
        alphabet=st.characters(blacklist_categories=("Cs", "Zs", "Cc"), blacklist_characters=".*>"),
        min_size=1,
        max_size=40,
    ),
    st.sampled_from(["owner", "a:b@c", "-lead", "é", "😀", "x" * 129, "DROP_TABLE", "$SYS", "_INBOX"]),
)
