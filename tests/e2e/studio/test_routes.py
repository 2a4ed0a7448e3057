"""What the Studio stands on, over plain HTTP (no browser): the ``/studio`` mount and its headers,
and the routes the page calls beyond the memory API (whoami, stats, activity) with their keys."""

from __future__ import annotations

import httpx

from .conftest import Stack
from .helpers import rest


async def test_the_page_is_served_with_a_strict_policy(stack: Stack) -> None:
    async with httpx.AsyncClient(base_url=stack.url) as http:
        moved = await http.get("/studio")
        assert moved.status_code == 308 and moved.headers["location"] == "/studio/"
        index = await http.get("/studio/")
        assert index.status_code == 200 and "Memory Studio" in index.text
        policy = index.headers["content-security-policy"]
        assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy
        assert index.headers["x-content-type-options"] == "nosniff"
        script = await http.get("/studio/js/app.js")
        assert script.status_code == 200 and "javascript" in script.headers["content-type"]
        assert (await http.get("/studio/js/../../app.py")).status_code == 404
        assert (await http.get("/studio/missing.js")).status_code == 404


async def test_whoami_names_the_role_and_owner(stack: Stack) -> None:
    assert (await rest(stack, "alice", "GET", "/v1/whoami"))[1] | {"key_id": ""} == {
        "key_id": "",
        "role": "owner",
        "owner": "alice",
        "name": "studio test alice",
    }
    status, me = await rest(stack, "operator", "GET", "/v1/whoami")
    assert status == 200 and me["role"] == "operator" and "owner" not in me
    async with httpx.AsyncClient(base_url=stack.url) as http:
        assert (await http.get("/v1/whoami")).status_code == 401
        bad = await http.get("/v1/whoami", headers={"Authorization": "Bearer mk_000000000000_" + "0" * 48})
        assert bad.status_code == 401 and bad.headers["content-type"].startswith("application/problem+json")


async def test_stats_stay_behind_the_key(stack: Stack) -> None:
    for content in ("Stats one about kiwis", "Stats two about kiwis"):
        assert (await rest(stack, "bob", "POST", "/v1/memories", {"content": content}))[0] == 200
    status, stats = await rest(stack, "bob", "GET", "/v1/stats")
    assert status == 200 and stats["total"] >= 2 and stats["by_state"]["active"] == stats["total"]
    assert stats["tokens"] >= 12 and stats["last_activity"]
    assert (await rest(stack, "operator", "GET", "/v1/stats?owner=bob"))[1] == stats
    assert (await rest(stack, "alice", "GET", "/v1/stats?owner=bob"))[0] == 403
    status, problem = await rest(stack, "operator", "GET", "/v1/stats")
    assert status == 400 and problem["field"] == "$.owner"


async def test_activity_is_for_operators(stack: Stack) -> None:
    status, sample = await rest(stack, "operator", "GET", "/v1/activity")
    assert status == 200, sample
    assert {"ingest", "extract", "embed", "sleep"} <= set(sample["lag"]) and sample["events"] >= 0
    assert sample.get("errors", {}) == {} or set(sample["errors"]) <= {"searches"}
    assert (await rest(stack, "alice", "GET", "/v1/activity"))[0] == 403
    status, spec = await rest(stack, "operator", "GET", "/openapi.json")
    assert status == 200 and {"/v1/whoami", "/v1/stats", "/v1/activity"} <= set(spec["paths"])
