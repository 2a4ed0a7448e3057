"""The OpenAPI 3.1 document, generated from the route table and the same msgspec Structs.

Request bodies are the RPC request Structs as ``<Name>Body`` schemas: the same properties, with
``owner`` (filled from the key), the tag ``type``, path and route-fixed fields not required.
GET/DELETE routes take those fields as query parameters. Every error is a ``Problem``.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from .problem import PROBLEM_MEDIA, Problem

if TYPE_CHECKING:
    from ..routes import Route

REF = "#/components/schemas/{name}"
_ERRORS = {
    "400": "Invalid request (``field`` names the path)",
    "401": "Missing or unknown API key",
    "403": "The key may not do this (another owner, or an operator route)",
    "404": "Not found for this owner",
    "413": "Payload too large",
    "503": "A dependency (NATS, a service) is down",
}


def _ref(tp: type) -> dict[str, str]:
    return {"$ref": REF.format(name=tp.__name__)}


def _body_schema(schema: dict[str, Any], optional: set[str]) -> dict[str, Any]:
    body = copy.deepcopy(schema)
    body["required"] = [f for f in body.get("required", []) if f not in optional]
    body["title"] = f"{schema.get('title', '')}Body"
    return body


def _errors() -> dict[str, Any]:
    content = {PROBLEM_MEDIA: {"schema": _ref(Problem)}}
    return {code: {"description": text, "content": content} for code, text in _ERRORS.items()}


def _is_object(schema: dict[str, Any]) -> bool:
    """Whether a field's schema is a JSON object (possibly nullable)."""
    return schema.get("type") == "object" or any(s.get("type") == "object" for s in schema.get("anyOf", []))


def _operation(route: Route, components: dict[str, Any]) -> dict[str, Any]:
    op: dict[str, Any] = {
        "operationId": route.name,
        "summary": route.summary,
        "tags": [route.tag],
        "security": [{"apiKey": []}],
        "parameters": [
            {
                "name": "x-memory-owner",
                "in": "header",
                "required": False,
                "schema": {"type": "string"},
                "description": "operator keys: the owner to act for",
            },
        ],
    }
    path_fields = {seg[1:-1] for seg in route.path.split("/") if seg.startswith("{")}
    for name in sorted(path_fields):
        op["parameters"].append({"name": name, "in": "path", "required": True, "schema": {"type": "string"}})
    if route.request is not None:
        schema = components[route.request.__name__]
        optional = {"type", "owner", *path_fields, *route.fixed}
        if route.in_body:
            body_name = f"{route.request.__name__}Body"
            components.setdefault(body_name, _body_schema(schema, optional))
            content = {media: {"schema": {"$ref": REF.format(name=body_name)}} for media in route.body_media}
            if "application/x-ndjson" in content:
                content["application/x-ndjson"] = {"schema": {"type": "string", "description": "JSON lines"}}
            op["requestBody"] = {"required": True, "content": content}
        else:
            required = set(schema.get("required", [])) - optional
            for name, prop in schema.get("properties", {}).items():
                if name in optional - {"owner"} or name in path_fields:
                    continue
                param: dict[str, Any] = {"name": name, "in": "query", "required": name in required}
                if _is_object(prop):  # a JSON object in one parameter (``?filters={...}``)
                    param["content"] = {"application/json": {"schema": prop}}
                else:
                    param["schema"] = prop
                op["parameters"].append(param)
    elif route.path == "/v1/chat/completions":
        op["requestBody"] = {"required": True, "content": {"application/json": {"schema": {"type": "object"}}}}
        op["parameters"] += [
            {
                "name": "x-memory-no-memory",
                "in": "header",
                "required": False,
                "schema": {"type": "string"},
                "description": "true|1|yes: no retrieval, no injection, nothing remembered",
            },
            {
                "name": "x-memory-session",
                "in": "header",
                "required": False,
                "schema": {"type": "string"},
                "description": "scopes retrieval and the remembered exchange to a session",
            },
            {
                "name": "x-memory-agent",
                "in": "header",
                "required": False,
                "schema": {"type": "string"},
                "description": "scopes retrieval and the remembered exchange to an agent",
            },
            {
                "name": "x-memory-provider",
                "in": "header",
                "required": False,
                "schema": {"type": "string"},
                "description": "the upstream provider (decides system vs user placement)",
            },
        ]
    if route.result is not None:
        reply = {"description": "OK", "content": {route.reply_media: {"schema": _ref(route.result)}}}
    elif route.reply_media == "application/x-ndjson":
        reply = {"description": "JSON lines, one MemoryRecord each", "content": {route.reply_media: {}}}
    else:
        reply = {
            "description": "The upstream's reply, unchanged (x-memory-status says what memory did)",
            "content": {"application/json": {"schema": {"type": "object"}}, "text/event-stream": {}},
        }
    op["responses"] = {"200": reply, **_errors()}
    return op


def _probe(summary: str) -> dict[str, Any]:
    return {
        "get": {
            "operationId": summary.split()[0].lower(),
            "summary": summary,
            "tags": ["probes"],
            "security": [],
            "responses": {"200": {"description": "OK"}, "503": {"description": "Not ready"}},
        }
    }


def document(routes: Sequence[Route], *, version: str) -> dict[str, Any]:
    """The whole OpenAPI 3.1 document."""
    types: list[type] = [Problem]
    for route in routes:
        types += [t for t in (route.request, route.result) if t is not None]
    _, components = msgspec.json.schema_components(list(dict.fromkeys(types)), ref_template=REF)
    paths: dict[str, dict[str, Any]] = {}
    for route in routes:
        paths.setdefault(route.path, {})[route.method.lower()] = _operation(route, components)
    paths["/healthz"] = _probe("Healthz: the process is up")
    paths["/livez"] = _probe("Livez: the event loop answers and the NATS connection is not closed")
    paths["/readyz"] = _probe(
        "Readyz: the gateway can serve (NATS connected); an operator key adds every service's health"
    )
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "memoryd",
            "version": version,
            "description": "Long-term memory for LLM applications: REST, an OpenAI-compatible proxy and MCP.",
        },
        "paths": paths,
        "components": {
            "schemas": components,
            "securitySchemes": {"apiKey": {"type": "http", "scheme": "bearer", "description": "mk_... API key"}},
        },
    }
