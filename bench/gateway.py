"""``python -m bench gateway``: what HTTP costs on top of NATS, and what the chat proxy adds.

1. Search: the same ``retrieve`` request over NATS request-reply (``memoryd.rpc.call``)
   and over HTTP (``POST /v1/search`` through the gateway, one pooled ``httpx`` client), at each
   concurrency, alternating NATS and HTTP rounds so both see the same machine load. Reported:
   p50/p99 and throughput per path, p50 added by HTTP and the HTTP/NATS throughput ratio.
2. Proxy: ``POST /v1/chat/completions`` to the scripted upstream (``tests/support/fake_llm.py``)
   directly and through the proxy with ``x-memory-no-memory: true`` (memory retrieval excluded,
   as the goal says), same alternation. Reported: p50/p99, throughput and p50 added.

Each row also carries the CPU the gateway process and the load generator spent per request
(from /proc): on a loaded machine latency includes waiting for a core at every process hop,
CPU does not. Goals: HTTP adds <= 1 ms at p50 and keeps >= 0.8x the NATS throughput; the proxy adds <= 2 ms
at p50. The load generator, the scripted upstream and the services share the machine's cores:
compare the paths within one run (ratios), not with other machines.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import httpx

from bench.harness import ServiceStack, cpu_delta, embedded_servers, wait_until
from bench.locomo import percentile
from bench.report import environment, markdown_table, render_peak_rss
from memoryd.rpc import call
from memoryd.schemas.memory import MemoryCreateRequest
from memoryd.schemas.retrieval import RetrieveRequest
from shared.api_keys import KeyStore, new_key, open_bucket
from tests.support.fake_llm import FakeLlm

SERVICES = ("ingest", "extract", "embed", "retrieve", "gateway")
OWNER = "bench-gateway"
TOPICS = ("coffee", "hiking", "rust", "typescript", "trains", "jazz", "chess", "tea", "cycling", "sushi")
Request = Callable[[int], Awaitable[None]]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def measure(request: Request, total: int, concurrency: int) -> dict[str, Any]:
    """``total`` requests from ``concurrency`` workers: latency percentiles and throughput."""
    latencies: list[float] = []
    next_index = iter(range(total))

    async def worker() -> None:
        for i in next_index:
            started = time.perf_counter()
            await request(i)
            latencies.append((time.perf_counter() - started) * 1000)

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    elapsed = time.perf_counter() - started
    return {
        "requests": total,
        "p50_ms": round(percentile(latencies, 50), 3),
        "p99_ms": round(percentile(latencies, 99), 3),
        "rps": round(total / elapsed, 1),
    }


Cpu = Callable[[], Mapping[str, float]]


async def compare(
    paths: dict[str, Request], concurrency: Sequence[int], per_level: Callable[[int], int], rounds: int, cpu: Cpu
) -> list[dict[str, Any]]:
    """Each path at each concurrency, ``rounds`` alternating rounds; the round with the best p50 counts.

    ``gateway_cpu_ms`` / ``client_cpu_ms``: CPU the gateway process / this load generator spent
    per request (from /proc), which the machine's load does not inflate as it does latency.
    """
    rows = []
    for c in concurrency:
        best: dict[str, dict[str, Any]] = {}
        for _ in range(rounds):
            for name, request in paths.items():
                await measure(request, min(20, per_level(c)), c)  # warm connections
                before = cpu()
                result = await measure(request, per_level(c), c)
                spent = cpu_delta(before, cpu())
                result["gateway_cpu_ms"] = round(spent.get("gateway", 0.0) * 1000 / result["requests"], 3)
                result["client_cpu_ms"] = round(spent.get("bench", 0.0) * 1000 / result["requests"], 3)
                if name not in best or result["p50_ms"] < best[name]["p50_ms"]:
                    best[name] = result
        rows += [{"path": name, "concurrency": c, **best[name]} for name in paths]
    return rows


def _deltas(rows: list[dict[str, Any]], base: str, other: str) -> list[dict[str, Any]]:
    out = []
    for c in sorted({r["concurrency"] for r in rows}):
        a = next(r for r in rows if r["path"] == base and r["concurrency"] == c)
        b = next(r for r in rows if r["path"] == other and r["concurrency"] == c)
        out.append(
            {
                "concurrency": c,
                "p50_added_ms": round(b["p50_ms"] - a["p50_ms"], 3),
                "p99_added_ms": round(b["p99_ms"] - a["p99_ms"], 3),
                "throughput_ratio": round(b["rps"] / a["rps"], 3) if a["rps"] else None,
            }
        )
    return out


async def _seed(stack: ServiceStack, memories: int) -> None:
    async def one(i: int) -> None:
        topic = TOPICS[i % len(TOPICS)]
        text = f"Note {i}: I like {topic} and talked about {topic} number {i} with friend {i % 37}."
        await call(stack.nc, "memory.create", MemoryCreateRequest(owner=OWNER, content=text), timeout=30)

    for start in range(0, memories, 50):
        await asyncio.gather(*(one(i) for i in range(start, min(memories, start + 50))))

    async def embedded() -> bool:
        n = await stack.pool.fetchval(
            "SELECT count(*) FROM memory_embeddings e JOIN memories m ON m.id = e.memory_id WHERE m.owner = $1", OWNER
        )
        return int(n) >= memories

    await wait_until(embedded, timeout=600, what=f"{memories} memories embedded")


async def run_gateway_bench(
    *, memories: int, concurrency: Sequence[int], requests: int, rounds: int, log: Callable[[str], None]
) -> dict[str, Any]:
    port = _free_port()
    async with FakeLlm() as llm, embedded_servers() as servers:
        llm.handler = lambda req: "A short scripted answer."
        env = {"MEMORYD_GATEWAY_PORT": str(port), "MEMORYD_GATEWAY_UPSTREAM_URL": llm.base_url}
        async with ServiceStack(servers.nats_url, servers.pg_dsn, services=SERVICES, servers=servers, env=env) as stack:
            token, record = new_key("owner", OWNER, name="bench")
            await KeyStore(await open_bucket(stack.nc.jetstream())).put(record)
            log(f"seeding {memories} memories")
            await _seed(stack, memories)
            base = f"http://127.0.0.1:{port}"
            limits = httpx.Limits(max_connections=max(concurrency) * 2, max_keepalive_connections=max(concurrency) * 2)
            headers = {"authorization": f"Bearer {token}"}
            async with httpx.AsyncClient(base_url=base, headers=headers, limits=limits, timeout=30) as http:

                def query(i: int) -> str:
                    return f"what do I like about {TOPICS[i % len(TOPICS)]}?"

                async def over_nats(i: int) -> None:
                    await call(stack.nc, "retrieve", RetrieveRequest(owner=OWNER, query=query(i)), timeout=30)

                async def over_http(i: int) -> None:
                    response = await http.post("/v1/search", json={"query": query(i)})
                    response.raise_for_status()

                log("search: NATS vs HTTP")
                search = await compare(
                    {"nats": over_nats, "http": over_http},
                    concurrency,
                    lambda c: max(requests, 25 * c),
                    rounds,
                    stack.cpu_seconds,
                )
                chat = {"model": "fake", "messages": [{"role": "user", "content": "Say something short."}]}

                async def direct(i: int) -> None:
                    response = await http.post(f"{llm.base_url}/chat/completions", json=chat)
                    response.raise_for_status()

                async def proxied(i: int) -> None:
                    response = await http.post("/v1/chat/completions", json=chat, headers={"x-memory-no-memory": "1"})
                    response.raise_for_status()

                log("proxy: upstream directly vs through the gateway")
                proxy = await compare(
                    {"upstream": direct, "proxy": proxied},
                    concurrency,
                    lambda c: max(requests, 25 * c),
                    rounds,
                    stack.cpu_seconds,
                )
                peak_rss = stack.peak_rss_mb()
                await _initialize_mcp(http)
                peak_rss_mcp = stack.peak_rss_mb().get("gateway")
    search_delta = _deltas(search, "nats", "http")
    proxy_delta = _deltas(proxy, "upstream", "proxy")
    one = search_delta[0]
    goals = [
        {"target": "HTTP adds <= 1 ms at p50 (c=1)", "value": one["p50_added_ms"], "ok": one["p50_added_ms"] <= 1},
        {
            "target": f"HTTP throughput >= 0.8x NATS (c={search_delta[-1]['concurrency']})",
            "value": search_delta[-1]["throughput_ratio"],
            "ok": (search_delta[-1]["throughput_ratio"] or 0) >= 0.8,
        },
        {
            "target": "proxy adds <= 2 ms at p50 (c=1, memory excluded)",
            "value": proxy_delta[0]["p50_added_ms"],
            "ok": proxy_delta[0]["p50_added_ms"] <= 2,
        },
    ]
    http_cpu = next(r for r in search if r["path"] == "http" and r["concurrency"] == concurrency[0])
    proxy_cpu = next(r for r in proxy if r["path"] == "proxy" and r["concurrency"] == concurrency[0])
    goals += [
        {"target": "gateway CPU per search request (ms, info)", "value": http_cpu["gateway_cpu_ms"], "ok": None},
        {"target": "gateway CPU per proxied call (ms, info)", "value": proxy_cpu["gateway_cpu_ms"], "ok": None},
    ]
    return {
        "benchmark": "gateway",
        "environment": environment(),
        "memories": memories,
        "rounds": rounds,
        "search": search,
        "search_http_vs_nats": search_delta,
        "proxy": proxy,
        "proxy_vs_upstream": proxy_delta,
        "goals": goals,
        "peak_rss_mb": peak_rss,
        "gateway_peak_rss_mb_after_mcp": peak_rss_mcp,
    }


async def _initialize_mcp(http: httpx.AsyncClient) -> None:
    """One MCP ``initialize`` over streamable HTTP: the gateway loads its MCP server on first use."""
    hello = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"},
        },
    }
    response = await http.post("/mcp", json=hello, headers={"accept": "application/json, text/event-stream"})
    response.raise_for_status()


def render(report: dict[str, Any]) -> str:
    def table(rows: list[dict[str, Any]]) -> str:
        return markdown_table(
            ["path", "c", "p50 ms", "p99 ms", "req/s", "gateway CPU ms/req", "client CPU ms/req"],
            [
                [
                    r["path"],
                    r["concurrency"],
                    r["p50_ms"],
                    r["p99_ms"],
                    r["rps"],
                    r["gateway_cpu_ms"],
                    r["client_cpu_ms"],
                ]
                for r in rows
            ],
        )

    def deltas(rows: list[dict[str, Any]]) -> str:
        return markdown_table(
            ["c", "p50 added ms", "p99 added ms", "throughput ratio"],
            [[r["concurrency"], r["p50_added_ms"], r["p99_added_ms"], r["throughput_ratio"]] for r in rows],
        )

    goals = markdown_table(
        ["goal", "value", "met"],
        [[g["target"], g["value"], {True: "yes", False: "no", None: "—"}[g["ok"]]] for g in report["goals"]],
    )
    memory = []
    if peaks := report.get("peak_rss_mb"):
        memory.append(f"After the searches and proxied calls. {render_peak_rss(peaks)}")
        if (after := report.get("gateway_peak_rss_mb_after_mcp")) is not None:
            memory.append(
                f"The gateway's peak after one MCP request (the MCP server loads on first use): {after:.0f} MB."
            )
    return "\n\n".join(
        [
            f"Search over NATS request-reply vs HTTP (`POST /v1/search`), {report['memories']} memories, hybrid:",
            table(report["search"]),
            deltas(report["search_http_vs_nats"]),
            "Chat completions: the scripted upstream directly vs through the proxy (no memory):",
            table(report["proxy"]),
            deltas(report["proxy_vs_upstream"]),
            goals,
            *memory,
        ]
    )
