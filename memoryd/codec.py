"""JSON encoding and decoding of wire messages, with decoders built once per type.

Decoding failures become ``ValidationFailed`` carrying msgspec's path (e.g.
``Expected `str`, got `int` - at `$.messages[0].content```), and oversize payloads
become ``TooLarge``. JSON nested deeper than ``MAX_JSON_DEPTH`` is refused before
msgspec sees it (msgspec raises ``RecursionError`` on deep nesting, which no caller
expects); ``decode`` lets no other exception out. ``nul_path`` finds the text storage refuses.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from memoryd.errors import TooLarge, ValidationFailed
from memoryd.schemas import RPC_OPS, Wire
from memoryd.schemas.base import MAX_PAYLOAD_BYTES
from memoryd.schemas.depth import MAX_JSON_DEPTH, json_depth_exceeds
from memoryd.schemas.events import Activity, ChatEvent, DeadLetter, EmbedJob, ExtractJob, SleepRun
from memoryd.schemas.ops import HealthRequest, HealthResult, RpcError

T = TypeVar("T")

_encoder = msgspec.json.Encoder()
_AT_PATH = re.compile(r" - at `(\$[^`]*)`$")


def validation_failed(exc: msgspec.ValidationError, prefix: str = "") -> ValidationFailed:
    """``ValidationFailed`` with the offending field's path as data. msgspec names the path only in
    its message (``... - at `$.messages[0].content```): this is the one place it is read back.
    ``prefix`` places a nested value's path in its parent (``$.messages[2]``)."""
    text = str(exc)
    match = _AT_PATH.search(text)
    if match is None:
        return ValidationFailed(text)
    field = prefix + match.group(1)[1:] if prefix else match.group(1)
    return ValidationFailed.at(field, text[: match.start()])


def encode(msg: Any) -> bytes:
    """Encode a Struct (or any msgspec-encodable value) as JSON."""
    return _encoder.encode(msg)


@functools.cache
def _decoder(tp: Any) -> msgspec.json.Decoder[Any]:
    return msgspec.json.Decoder(tp)


def decode(data: bytes | str, tp: type[T], *, max_bytes: int = MAX_PAYLOAD_BYTES) -> T:
    """Decode ``data`` as ``tp``; raise ``TooLarge`` or ``ValidationFailed``, never anything else."""
    if len(data) > max_bytes:
        raise TooLarge(f"payload is {len(data)} bytes; the limit is {max_bytes}")
    if json_depth_exceeds(data):
        raise ValidationFailed(f"JSON nests deeper than {MAX_JSON_DEPTH} levels (or its brackets do not pair up)")
    try:
        return _decoder(tp).decode(data)  # type: ignore[arg-type]
    except msgspec.ValidationError as exc:
        raise validation_failed(exc) from exc
    except msgspec.DecodeError as exc:
        raise ValidationFailed(f"malformed JSON: {exc}") from exc
    except (RecursionError, MemoryError, ValueError, TypeError) as exc:  # msgspec's own limits
        raise ValidationFailed(f"undecodable payload: {type(exc).__name__}") from exc


def decode_reply(data: bytes, result: type[T]) -> T | RpcError:
    """Decode an RPC reply as ``result | RpcError``."""
    return _decoder(result | RpcError).decode(data)


#: Every message type that appears on the wire, for the JSON Schema export.
def wire_types() -> list[type[Wire]]:
    types: list[type[Wire]] = [ChatEvent, ExtractJob, EmbedJob, SleepRun, Activity, DeadLetter]
    types += [HealthRequest, HealthResult, RpcError]
    for op in RPC_OPS.values():
        types += [op.request, op.result]
    return list(dict.fromkeys(types))  # an op may reuse another's types (admin.memory.create)


def export_json_schemas(out_dir: Path) -> list[Path]:
    """Write one JSON Schema per wire message into ``out_dir``; return the paths written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for tp in wire_types():
        schema = msgspec.json.schema(tp)
        path = out_dir / f"{tp.__struct_config__.tag}.json"
        path.write_text(json.dumps(schema, indent=2, sort_keys=True) + "\n")
        written.append(path)
    return written
