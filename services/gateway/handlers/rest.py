"""The REST routes backed by one RPC each: decode, authorise, call, reply with the result Struct."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import msgspec
import msgspec.inspect
from starlette.requests import Request
from starlette.responses import Response

from memoryd.errors import Forbidden, ValidationFailed
from shared.api_keys import ApiKeyRecord

from ..context import Gateway
from ..logic.auth import acting_owner, require_operator
from ..logic.exposure import owner_engine_status, owner_settings
from ..routes import NDJSON, Route
from .common import Endpoint, authenticate, convert, guarded, json_object, json_response, named_owners, read_body
from .proxy_limits import admit_events

#: What an owner key gets of a reply that also holds the deployment's global state.
OWNER_VIEWS: dict[str, Callable[[Any], Any]] = {"engine.status": owner_engine_status, "settings.get": owner_settings}

#: Writes an operator key sends on the operator's subject (``admin.<op>``), which may touch a
#: global memory; an owner key's go to the client subject, where a global memory is 403.
OPERATOR_WRITES = ("memory.update", "memory.delete", "memory.restore", "memory.import")


async def raw_fields(gw: Gateway, route: Route, request: Request) -> dict[str, Any]:
    """The request's fields before validation: body or query string, then path parameters."""
    if route.in_body:
        body = await read_body(gw, request)
        if NDJSON in route.body_media and request.headers.get("content-type", "").startswith(NDJSON):
            raw: dict[str, Any] = {"lines": body.decode("utf-8", errors="replace")}
        else:
            raw = json_object(body)
    else:
        raw = dict(request.query_params)
        for name in object_fields(route.request):
            if name in raw:
                try:
                    raw[name] = json_object(raw[name].encode())
                except ValidationFailed as exc:
                    raise ValidationFailed.at(f"$.{name}", exc.description) from exc
    return {**raw, **request.path_params}


@functools.cache
def object_fields(tp: type | None) -> frozenset[str]:
    """Fields of ``tp`` that are JSON objects: in a query string each is one parameter holding JSON
    (``GET /v1/memories?filters={"project":"web"}``), as the OpenAPI document says."""
    if tp is None:
        return frozenset()
    info = msgspec.inspect.type_info(tp)
    assert isinstance(info, msgspec.inspect.StructType)

    def is_object(t: msgspec.inspect.Type) -> bool:
        if isinstance(t, msgspec.inspect.UnionType):
            return any(is_object(u) for u in t.types)
        return isinstance(t, msgspec.inspect.DictType)

    return frozenset(f.name for f in info.fields if is_object(f.type))


def build_request(route: Route, key: ApiKeyRecord, request: Request, raw: dict[str, Any]) -> Any:
    """The RPC request Struct, with the owner the key may act for."""
    assert route.request is not None
    if key.role != "operator":
        for name, value in route.owner_key_requires.items():
            if raw.get(name) != value:
                raise Forbidden(f"owner keys may only send {name}={msgspec.json.encode(value).decode()} here")
    raw = {**raw, **route.fixed}
    fields = {f.name: f for f in msgspec.structs.fields(route.request)}
    if "owner" in fields:
        owner = acting_owner(
            key.role, key.owner, [raw.get("owner"), *named_owners(request)], required=fields["owner"].required
        )
        raw.pop("owner", None)
        if owner is not None:
            raw["owner"] = owner
    return convert(raw, route.request, strict=route.in_body)


def rpc_endpoint(gw: Gateway, route: Route) -> Endpoint:
    assert route.op is not None
    op = route.op

    @guarded
    async def endpoint(request: Request) -> Response:
        key = await authenticate(gw, request)
        if route.operator:
            require_operator(key.role, f"{route.method} {route.path}")
        rpc_request = build_request(route, key, request, await raw_fields(gw, route, request))
        this_op = op
        if op == "memory.create" and getattr(rpc_request, "scope", None) == "global":
            require_operator(key.role, "a global memory")
            this_op = "admin.memory.create"
        elif key.role == "operator" and op in OPERATOR_WRITES:
            this_op = f"admin.{op}"  # an operator key also reaches global memories
        if op == "memory.batch":  # its messages items are chat events: the key's events per second hold
            await admit_events(gw, key, sum(1 for item in rpc_request.items if item.messages is not None))
        timeout = None
        if op in ("memory.import", "sleep.run"):
            timeout = max(gw.config.rpc_timeout_s, float(getattr(rpc_request, "timeout_s", 0) or 0) + 5, 60.0)
        result = await gw.call(this_op, rpc_request, timeout=timeout)
        if key.role != "operator" and op in OWNER_VIEWS:
            result = OWNER_VIEWS[op](result)
        return json_response(result)

    return endpoint
