"""REST /v1 against a real stack: every OpenAPI operation answers, errors are problem+json with the
field path, keys are checked (401), owners are kept apart (403 / 404)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import asyncpg
import pytest

from services.gateway.routes import ROUTES
from shared.service_names import BACKEND_SERVICES

from .conftest import Stack

pytestmark = [pytest.mark.integration, pytest.mark.slow]


async def test_every_route_is_in_openapi_and_every_operation_answers(stack: Stack) -> None:
    async with stack.client(stack.operator_key) as http:
        doc = (await http.get("/openapi.json")).json()
        assert doc["openapi"] == "3.1.0"
        for route in ROUTES:
            assert route.method.lower() in doc["paths"][route.path], route.name
        owner = {"x-memory-owner": stack.alice}
        created = await http.post("/v1/memories", json={"content": "I prefer dark roast coffee."}, headers=owner)
        assert created.status_code == 200, created.text
        memory_id = created.json()["memory"]["id"]
        stack.llm.handler = lambda req: "Noted."
        bodies: dict[str, Any] = {
            "memories_create": {"content": "I always bike to work."},
            "memories_clear": {"memory_type": "procedural"},
            "memories_batch": {
                "items": [
                    {"content": "I always walk to work."},
                    {"messages": [{"role": "user", "content": "I love tea."}]},
                ]
            },
            "memories_update": {"content": "I prefer light roast coffee."},
            "events_publish": {"messages": [{"role": "user", "content": "I love hiking."}]},
            "import": {"lines": ""},
            "search": {"query": "coffee"},
            "search_preview": {"query": "coffee"},
            "inject": {"messages": [{"role": "user", "content": "coffee?"}]},
            "summarize": {"older_than_days": 30, "dry_run": True},
            "cleanup": {"dry_run": True},
            "reindex": {"dry_run": True},
            "settings_put": {"values": {}, "owner": stack.alice},
            "sleep_run": {},
            "conflicts_resolve": {"action": "dismiss"},
            "chat_completions": {"model": "fake", "messages": [{"role": "user", "content": "hi"}]},
            "responses": {"model": "fake", "input": "hi"},
        }
        # an active memory has nothing to restore; a memory id is no entry of the review queue
        expected = {"memories_restore": {409, 200}, "conflicts_resolve": {404}}
        called = []
        for path, methods in doc["paths"].items():
            for method, op in methods.items():
                name = op["operationId"]
                url = path.replace("{id}", memory_id)
                if name == "memories_delete":
                    continue  # last, below
                response = await http.request(method.upper(), url, json=bodies.get(name), headers=owner)
                assert response.status_code in expected.get(name, {200, 202}), (name, response.text)
                called.append(name)
        deleted = await http.delete(f"/v1/memories/{memory_id}", headers=owner)
        assert deleted.status_code == 200 and deleted.json()["id"] == memory_id
        assert set(called) | {"memories_delete"} == {
            op["operationId"] for m in doc["paths"].values() for op in m.values()
        }


async def test_bad_body_is_400_with_the_field_path(stack: Stack) -> None:
    async with stack.client(stack.alice_key) as http:
        response = await http.post("/v1/memories", json={"content": 5})
        assert response.status_code == 400
        assert response.headers["content-type"] == "application/problem+json"
        problem = response.json()
        assert problem["field"] == "$.content" and problem["err_code"] == "validation" and problem["status"] == 400
        not_json = await http.post("/v1/search", content=b"{nope", headers={"content-type": "application/json"})
        assert not_json.status_code == 400 and "malformed JSON" in not_json.json()["detail"]
        bad_query = await http.get("/v1/memories", params={"limit": "0"})
        assert bad_query.status_code == 400 and bad_query.json()["field"] == "$.limit"


async def test_missing_or_wrong_keys_are_401(stack: Stack) -> None:
    async with stack.client(None) as http:
        missing = await http.get("/v1/memories")
        assert missing.status_code == 401 and missing.json()["err_code"] == "unauthorized"
        assert missing.headers["www-authenticate"] == "Bearer"
        forged = stack.alice_key[:-4] + ("0000" if not stack.alice_key.endswith("0000") else "1111")
        for token in ("nonsense", forged, "mk_000000000000_" + "0" * 48):
            wrong = await http.get("/v1/memories", headers={"authorization": f"Bearer {token}"})
            assert wrong.status_code == 401, token
        assert (await http.get("/healthz")).json() == {"status": "ok"}


async def test_a_key_never_acts_for_another_owner(stack: Stack) -> None:
    async with stack.client(stack.bob_key) as bob, stack.client(stack.alice_key) as alice:
        secret = await bob.post("/v1/memories", json={"content": "My locker code is 4711."})
        bob_id = secret.json()["memory"]["id"]
        assert (await alice.get(f"/v1/memories/{bob_id}")).status_code == 404
        assert (await alice.delete(f"/v1/memories/{bob_id}")).status_code == 404
        assert (await alice.get("/v1/memories", params={"owner": stack.bob})).status_code == 403
        body_owner = await alice.post("/v1/search", json={"owner": stack.bob, "query": "locker"})
        assert body_owner.status_code == 403 and body_owner.json()["err_code"] == "forbidden"
        header_owner = await alice.post("/v1/search", json={"query": "locker"}, headers={"x-memory-owner": stack.bob})
        assert header_owner.status_code == 403
        found = (await alice.post("/v1/search", json={"query": "locker code"})).json()
        assert all("4711" not in m["content"] for m in found["memories"])
        assert (await alice.put("/v1/settings", json={"values": {}})).status_code == 403  # operator route
        assert (await alice.post("/v1/summarize", json={"older_than_days": 1})).status_code == 403  # not a dry run
        assert (await bob.get(f"/v1/memories/{bob_id}")).json()["memory"]["content"] == "My locker code is 4711."


async def test_operator_keys_name_the_owner(stack: Stack) -> None:
    async with stack.client(stack.operator_key) as op:
        missing = await op.post("/v1/search", json={"query": "x"})
        assert missing.status_code == 400 and missing.json()["field"] == "$.owner"
        two = await op.post(
            "/v1/search", json={"owner": stack.alice, "query": "x"}, headers={"x-memory-owner": stack.bob}
        )
        assert two.status_code == 400
        listed = await op.get("/v1/memories", params={"owner": stack.bob})
        assert listed.status_code == 200 and all(m["owner"] == stack.bob for m in listed.json()["memories"])


async def test_export_streams_json_lines_and_import_takes_them_back(stack: Stack) -> None:
    async with stack.client(stack.alice_key) as http:
        for text in ("I prefer tea in the morning.", "I decided to learn Rust."):
            assert (await http.post("/v1/memories", json={"content": text})).status_code == 200
        export = await http.get("/v1/export")
        assert export.headers["content-type"].startswith("application/x-ndjson")
        lines = [ln for ln in export.text.splitlines() if ln]
        assert any("learn Rust" in ln for ln in lines)
        again = await http.post(
            "/v1/import", content="\n".join(lines), headers={"content-type": "application/x-ndjson"}
        )
        assert again.status_code == 200 and again.json()["unchanged"] == len(lines)


async def test_events_become_searchable_memory(stack: Stack) -> None:
    async with stack.client(stack.alice_key) as http:
        posted = await http.post(
            "/v1/events", json={"messages": [{"role": "user", "content": "I prefer kayaking on weekends."}]}
        )
        assert posted.status_code == 202 and posted.json()["event_id"]
        for _ in range(100):
            hits = (await http.post("/v1/search", json={"query": "kayaking weekends"})).json()["memories"]
            if any("kayaking" in m["content"] for m in hits):
                break
            await asyncio.sleep(0.1)
        else:
            raise AssertionError("the event never became memory")


async def test_readyz_reports_every_service_to_an_operator_only(stack: Stack) -> None:
    async with stack.client(None) as http:
        ready = await http.get("/readyz")
        assert (ready.status_code, ready.json()) == (200, {"status": "ready"})
        detailed = await http.get("/readyz", headers={"authorization": f"Bearer {stack.operator_key}"})
        assert detailed.status_code == 200, detailed.text
        assert set(detailed.json()["memory"]["services"]) == set(BACKEND_SERVICES)
        docs = await http.get("/docs")
        assert docs.status_code == 200 and "openapi.json" in docs.text and "cdn" not in docs.text.lower()


async def test_only_an_operator_key_changes_or_deletes_a_global_memory(stack: Stack) -> None:
    owner = {"x-memory-owner": stack.alice}
    async with stack.client(stack.operator_key) as op, stack.client(stack.alice_key) as alice:
        made = await op.post("/v1/memories", json={"content": "Office closes at 6.", "scope": "global"}, headers=owner)
        assert made.status_code == 200 and made.json()["memory"]["scope"] == "global", made.text
        path = f"/v1/memories/{made.json()['memory']['id']}"
        assert (await alice.patch(path, json={"content": "Office never closes."})).status_code == 403
        assert (await alice.delete(path)).status_code == 403
        changed = await op.patch(path, json={"content": "Office closes at 7."}, headers=owner)
        assert changed.status_code == 200 and changed.json()["memory"]["content"] == "Office closes at 7.", changed.text
        assert (await op.delete(path, headers=owner)).status_code == 200
        assert (await alice.get(path)).status_code == 404


async def test_the_conflict_review_queue_over_rest(stack: Stack, pg_dsn: str) -> None:
    async with stack.client(stack.alice_key) as alice, stack.client(stack.bob_key) as bob:
        made = []
        for text in ("I drink green tea every morning.", "I drink black tea every morning."):
            made.append((await alice.post("/v1/memories", json={"content": text})).json()["memory"]["id"])
        a, b = sorted(made)
        entry = str(uuid.uuid4())
        conn = await asyncpg.connect(pg_dsn)
        try:  # parked as a freeze-mode sleep run parks a pair
            await conn.execute(
                "INSERT INTO conflict_pending (id, owner, memory_a, memory_b, reason) VALUES ($1, $2, $3, $4, $5)",
                *(uuid.UUID(entry), stack.alice, uuid.UUID(a), uuid.UUID(b), "parked"),
            )
        finally:
            await conn.close()
        queue = await alice.get("/v1/conflicts")
        assert queue.status_code == 200, queue.text
        assert queue.json()["pending"] == 1 and [i["id"] for i in queue.json()["items"]] == [entry]
        assert {queue.json()["items"][0]["a"]["id"], queue.json()["items"][0]["b"]["id"]} == {a, b}
        assert (await bob.get("/v1/conflicts")).json() == {
            "type": "mem.v1.conflict_list_result",
            "items": [],
            "pending": 0,
        }
        other = await alice.get("/v1/conflicts", params={"owner": stack.bob})
        assert other.status_code == 403 and other.headers["content-type"] == "application/problem+json"
        stolen = await bob.post(f"/v1/conflicts/{entry}/resolve", json={"action": "dismiss"})
        assert stolen.status_code == 404 and stolen.headers["content-type"] == "application/problem+json"
        missing = await alice.post(f"/v1/conflicts/{entry}/resolve", json={"action": "merge", "keep": a})
        assert missing.status_code == 400 and missing.json()["field"] == "$.content"
        bad = await alice.post(f"/v1/conflicts/{entry}/resolve", json={"action": "pick"})
        assert bad.status_code == 400 and bad.json()["field"] == "$.action"
        body = {"action": "merge", "keep": a, "content": "I drink tea every morning.", "resolved_by": "rest-test"}
        merged = await alice.post(f"/v1/conflicts/{entry}/resolve", json=body)
        assert merged.status_code == 200, merged.text
        receipt = merged.json()["receipt"]
        assert (receipt["action"], receipt["kept"], receipt["archived"], receipt["resolved_by"]) == (
            "merge", a, b, "rest-test")  # fmt: skip
        assert merged.json()["pending"] == 0
        assert (await alice.get(f"/v1/memories/{a}")).json()["memory"]["content"] == "I drink tea every morning."
        assert (await alice.get(f"/v1/memories/{b}")).json()["memory"]["state"] == "archived"
        done = (await alice.get("/v1/conflicts", params={"status": "resolved"})).json()
        assert [i["receipt"]["resolved_at"] for i in done["items"]] == [receipt["resolved_at"]]
