"""Every way into ``retrieve`` refuses a session or agent id with a control character (NUL
included) before the engine runs: a request decoded from NATS (``memoryd.codec.decode``, which the
RPC wrapper uses; the gateway's REST, MCP and proxy doors reach retrieve only over NATS, held to the
same table in tests/integration/security), and the requests the retrieve service builds itself
(``inject`` from a decoded ``InjectRequest`` of the same constrained types, the health probe with
neither id). A new place that builds a ``RetrieveRequest`` fails ``test_every_place_that_builds``
until it is looked at: a Struct built in Python is not checked against its constraints."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import msgspec
import pytest

from memoryd.codec import decode
from memoryd.errors import ValidationFailed
from memoryd.schemas.retrieval import InjectRequest, RetrieveRequest

ROOT = Path(__file__).resolve().parents[3]
BAD = ["s\x00", "\x00", "a\x00b", "s\x1b[2J", "s\n", "s\x85", "s\x7f"]


@pytest.mark.parametrize("field", ["session_id", "agent_id"])
@pytest.mark.parametrize("value", BAD)
def test_a_decoded_request_refuses_control_characters(field: str, value: str) -> None:
    for kind, extra in (
        (RetrieveRequest, {"query": "x"}),
        (InjectRequest, {"messages": [{"role": "user", "content": "x"}]}),
    ):
        data = json.dumps({"owner": "o", **extra, field: value}).encode()
        with pytest.raises(ValidationFailed) as caught:
            decode(data, kind)
        assert caught.value.err_code == "validation" and f"$.{field}" in caught.value.description


def test_inject_passes_on_ids_of_the_same_constrained_types() -> None:
    retrieve = {f.name: f.type for f in msgspec.structs.fields(RetrieveRequest)}
    inject = {f.name: f.type for f in msgspec.structs.fields(InjectRequest)}
    assert inject["session_id"] == retrieve["session_id"] and inject["agent_id"] == retrieve["agent_id"]


def test_every_place_that_builds_a_retrieve_request() -> None:
    """Where a RetrieveRequest is built in the server, and which ids it is given."""
    sites: dict[str, list[set[str]]] = {}
    for path in sorted((ROOT / "services").rglob("*.py")) + sorted((ROOT / "shared").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            called = node.func if isinstance(node, ast.Call) else None
            name = getattr(called, "id", getattr(called, "attr", None))
            if name in ("RetrieveRequest", "replace") and isinstance(node, ast.Call):
                if name == "replace" and not any(k.arg in ("session_id", "agent_id") for k in node.keywords):
                    continue
                kwargs = {k.arg for k in node.keywords if k.arg in ("session_id", "agent_id")}
                sites.setdefault(str(path.relative_to(ROOT)), []).append(kwargs)
    assert sites == {
        "services/retrieve/handlers.py": [{"session_id", "agent_id"}],  # inject: req.session_id, req.agent_id
        "services/retrieve/status.py": [set()],  # the health probe: neither
    }
