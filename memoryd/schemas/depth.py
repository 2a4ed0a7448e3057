"""How deep a JSON document nests, measured without parsing it (pure, linear, in C).

msgspec raises ``RecursionError`` on deeply nested JSON (a ``dict`` field holding 100,000
nested lists is enough), so ``memoryd.codec.decode`` refuses anything nested deeper than
``MAX_JSON_DEPTH`` before msgspec sees it; import lines are checked the same way.
"""

from __future__ import annotations

import re

#: Deepest nesting of arrays and objects (Structs count) a wire message may have.
MAX_JSON_DEPTH = 64
_ESCAPE = re.compile(rb"\\.", re.DOTALL)
_STRING = re.compile(rb'"[^"]*"')
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")


def json_depth_exceeds(data: bytes | str, limit: int = MAX_JSON_DEPTH) -> bool:
    """True when ``data`` nests arrays/objects deeper than ``limit`` (or its brackets do not pair up).

    Linear in C: escapes go first (after that every quote delimits a string), then string
    bodies, then everything but brackets; each pass of removing innermost ``[]``/``{}`` pairs
    peels one level. Brackets that never pair up are malformed JSON: refused as well.
    """
    raw = data.encode() if isinstance(data, str) else bytes(data)
    if raw.count(b"[") + raw.count(b"{") <= limit:
        return False
    brackets = _STRING.sub(b"", _ESCAPE.sub(b"", raw)).translate(None, _NOT_BRACKET)
    for _ in range(limit):
        if not brackets:
            return False
        peeled = brackets.replace(b"[]", b"").replace(b"{}", b"")
        if peeled == brackets:
            return True
        brackets = peeled
    return bool(brackets)
