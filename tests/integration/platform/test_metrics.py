"""Each service's /metrics page carries its own families plus the runtime ones, never another service's."""

from __future__ import annotations

import asyncio
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from shared.settings.env import ServiceConfig
from tests.support.stack import run_services

RUNTIME = {"process_cpu_seconds", "process_resident_memory_bytes", "python_info", "python_gc_objects_collected"}
EVERY_SERVICE = {
    "memoryd_up",
    "memoryd_build_info",
    "memoryd_rpc_requests",
    "memoryd_rpc_seconds",
    "memoryd_secrets_unavailable_keys",
}


def _families(port: int) -> set[str]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
        names = {family.name for family in text_string_to_metric_families(reply.read().decode())}
    return {n for n in names if not n.endswith("_created")}  # the parser splits out an unlabelled histogram's


async def test_ingest_and_retrieve_pages_carry_only_their_own_families(config: ServiceConfig) -> None:
    async with run_services(["ingest", "retrieve"], config) as contexts:
        ingest = await asyncio.to_thread(_families, contexts["ingest"].metrics_port)
        retrieve = await asyncio.to_thread(_families, contexts["retrieve"].metrics_port)

    memoryd_ingest = {f for f in ingest if f.startswith("memoryd_")}
    memoryd_retrieve = {f for f in retrieve if f.startswith("memoryd_")}
    assert RUNTIME.issubset(ingest) and RUNTIME.issubset(retrieve)
    assert memoryd_ingest == EVERY_SERVICE | {
        "memoryd_events",
        "memoryd_turns",
        "memoryd_jobs",
        "memoryd_job_seconds",
        "memoryd_dlq",
        "memoryd_dlq_replayed",
        "memoryd_queue_lag_messages",
        "memoryd_stream_oldest_unprocessed_age_seconds",
        "memoryd_stream_max_age_seconds",
        "memoryd_llm_calls",
        "memoryd_llm_tokens",
    }
    assert memoryd_retrieve == EVERY_SERVICE | {
        "memoryd_retrieve_seconds",
        "memoryd_retrieve_fallbacks",
        "memoryd_retrieve_results",
        "memoryd_retrieve_keyword_tier",
        "memoryd_queue_lag_messages",
        "memoryd_llm_calls",
        "memoryd_llm_tokens",
    }
