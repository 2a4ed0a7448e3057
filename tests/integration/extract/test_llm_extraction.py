"""The optional LLM extractor inside the extract service, against the scripted LLM server."""

from __future__ import annotations

from typing import Any

import asyncpg
from nats.aio.client import Client

from memoryd.schemas.events import Turn
from shared.settings.env import ServiceConfig
from tests.support.fake_llm import FakeLlm
from tests.support.stack import run_services, service_config

from .helpers import FOUR_KEYS, TEXT, embed_jobs, facts, job, owner, publish, sample, wait_done

DARK_MODE = "llm:preference:user_prefers_dark_mode_in_editors"


def _config(config: ServiceConfig, llm: FakeLlm, budget: int = 0) -> ServiceConfig:
    return service_config(
        config.nats.url,
        config.pg.dsn,
        {
            "MEMORYD_LLM_BASE_URL": llm.base_url,
            "MEMORYD_LLM_MODEL": "fake-extractor",
            "MEMORYD_LLM_DAILY_TOKEN_BUDGET": str(budget),
        },
    )


async def _runs(pool: asyncpg.Pool, owner: str) -> list[tuple[str, int, int, int]]:
    rows = await pool.fetch("SELECT llm_status, rule_facts, llm_facts, runs FROM extract_runs WHERE owner = $1", owner)
    return [(r["llm_status"], r["rule_facts"], r["llm_facts"], r["runs"]) for r in rows]


async def test_llm_facts_are_added_beside_rule_facts(config: ServiceConfig, nc: Client, pool: asyncpg.Pool) -> None:
    alice = owner()
    js = nc.jetstream()
    extract_job = job(alice, Turn(role="user", content=TEXT), Turn(role="assistant", content="Noted, thanks!"))
    async with FakeLlm() as llm:
        llm.reply_json(
            {
                "facts": [
                    {
                        "category": "Preference",
                        "content": " User prefers  dark mode in editors ",
                        "memory_type": "factual",
                    },
                    {
                        "category": "habit",
                        "content": "user always commits before pushing.",
                        "memory_type": "procedural",
                    },
                    {"category": "project", "content": "User deploys with Helm", "memory_type": "procedural"},
                    {"category": "x", "content": "no"},  # too short: rejected alone
                    {"category": "goal", "content": "User wants to learn Rust", "memory_type": "wishful"},  # bad type
                    "not an object",
                ]
            },
            prompt_tokens=120,
            completion_tokens=40,
        )
        rejected_before = sample("memoryd_facts_total", {"extractor": "llm", "outcome": "rejected"})
        duplicate_before = sample("memoryd_facts_total", {"extractor": "llm", "outcome": "duplicate"})
        async with run_services(["extract"], _config(config, llm)):
            await publish(js, extract_job)
            await wait_done(pool, js, extract_job)
            await publish(js, extract_job)  # redelivered: the LLM is not asked again
            await wait_done(pool, js, extract_job, runs=2)
            stored = await facts(pool, alice)
            jobs = await embed_jobs(js, alice)
        requests = llm.requests
    # the habit the rules already found is not stored twice
    assert set(stored) == FOUR_KEYS | {DARK_MODE, "llm:project:user_deploys_with_helm"}
    dark = stored[DARK_MODE]
    assert (dark["content"], dark["type"], dark["source"]) == ("User prefers dark mode in editors", "factual", "llm")
    assert dark["metadata"]["category"] == "preference" and dark["metadata"]["event_id"] == extract_job.event_id
    assert stored["llm:project:user_deploys_with_helm"]["type"] == "procedural"
    assert len(jobs) == 6 and {j.memory_id for j, _ in jobs} == {str(r["id"]) for r in stored.values()}
    assert sample("memoryd_facts_total", {"extractor": "llm", "outcome": "rejected"}) == rejected_before + 3
    [request] = requests
    assert request["model"] == "fake-extractor" and request["response_format"] == {"type": "json_object"}
    prompt = request["messages"][-1]["content"]
    assert f"user: {TEXT}" in prompt and "Noted, thanks" not in prompt  # assistant turns are not sent
    audit = await pool.fetch(
        "SELECT operation, status, prompt_tokens, completion_tokens FROM llm_audit_logs WHERE owner = $1", alice
    )
    assert [tuple(r) for r in audit] == [("extract_facts", "ok", 120, 40)]
    assert await _runs(pool, alice) == [("ok", 4, 2, 2)]
    assert sample("memoryd_facts_total", {"extractor": "llm", "outcome": "duplicate"}) == duplicate_before + 1


async def test_llm_failures_never_block_the_rule_facts(config: ServiceConfig, nc: Client, pool: asyncpg.Pool) -> None:
    down, garbage, broke = owner(), owner(), owner()
    await pool.execute(
        "INSERT INTO llm_audit_logs (owner, operation, prompt_tokens, completion_tokens, status)"
        " VALUES ($1, 'extract_facts', 5000, 0, 'ok')",
        broke,
    )

    def answer(request: dict[str, Any]) -> tuple[int, dict[str, Any]] | str:
        prompt = request["messages"][-1]["content"]
        if "down-marker" in prompt:
            return 503, {"error": {"message": "overloaded"}}
        return "Sure! The facts are: dark mode, tabs."  # not JSON

    jobs = {
        down: job(down, Turn(role="user", content=f"{TEXT} down-marker")),
        garbage: job(garbage, Turn(role="user", content=TEXT)),
        broke: job(broke, Turn(role="user", content=TEXT)),
    }
    reasons = ("unavailable", "bad_reply", "budget")
    before = {r: sample("memoryd_extract_llm_skipped_total", {"reason": r}) for r in reasons}
    js = nc.jetstream()
    async with FakeLlm() as llm:
        llm.handler = answer
        async with run_services(["extract"], _config(config, llm, budget=3000)):
            for extract_job in jobs.values():
                await publish(js, extract_job)
            for extract_job in jobs.values():
                await wait_done(pool, js, extract_job)
            stored = {o: await facts(pool, o) for o in jobs}
            embeds = {o: await embed_jobs(js, o) for o in jobs}
        requests = llm.requests
    for o in jobs:
        assert set(stored[o]) == FOUR_KEYS, o  # the rule facts are committed and the job acked
        assert len(embeds[o]) == 4
    assert await _runs(pool, down) == [("unavailable", 4, 0, 1)]
    assert await _runs(pool, garbage) == [("bad_reply", 4, 0, 1)]
    assert await _runs(pool, broke) == [("budget", 4, 0, 1)]
    assert len(requests) == 3  # the 503 was retried once; the owner over budget sent nothing
    for reason in reasons:
        assert sample("memoryd_extract_llm_skipped_total", {"reason": reason}) == before[reason] + 1
    statuses = await pool.fetch(
        "SELECT owner, status FROM llm_audit_logs WHERE owner = ANY($1::text[]) ORDER BY id", list(jobs)
    )
    assert sorted((r["owner"], r["status"]) for r in statuses) == sorted(
        [(down, "error"), (garbage, "bad_reply"), (broke, "ok"), (broke, "budget_exceeded")]
    )
