"""Each alert of ``deploy/prometheus/alerts.yml`` fires on the condition it is written for, with
the labels and the summary the person on call reads, and stays quiet on a healthy neighbour:
``promtool test rules`` over synthetic series (one minute apart), one case per alert.

Descriptions are static text and are taken from the rules; summaries are templates, so each
case says what its summary must read. Budgets changed in ``alerts.yml`` change the cases here.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.support.prometheus import ALERTS, prometheus_paths


def _counter(per_minute: float, minutes: int = 40) -> str:
    return f"0+{per_minute:g}x{minutes}"


def _case(name: str, series: dict[str, str], alert: str, at: str, labels: dict[str, str], summary: str) -> Any:
    return {
        "name": name,
        "series": series,
        "alert": alert,
        "at": at,
        "labels": labels,
        "summary": summary,
    }


SEARCH_BUCKET = 'memoryd_http_request_duration_seconds_bucket{route="/v1/search", method="POST", status="200"'

CASES = [
    _case(
        "a service that stopped answering its scrape 2 minutes ago",
        {
            'up{job="memoryd-retrieve", instance="r1:9100"}': "1 1 0 0 0 0",
            'up{job="memoryd-embed", instance="e1:9100"}': "1x5",
        },
        "MemorydServiceDown",
        "5m",
        {"severity": "critical", "job": "memoryd-retrieve", "instance": "r1:9100"},
        "memoryd-retrieve on r1:9100 does not answer its scrape",
    ),
    _case(
        "two stored secrets a service cannot open",
        {
            'memoryd_secrets_unavailable_keys{job="memoryd-embed", instance="e1"}': "0 2x10",
            'memoryd_secrets_unavailable_keys{job="memoryd-ingest", instance="i1"}': "0x10",
        },
        "MemorydSecretsDegraded",
        "7m",
        {"severity": "warning", "job": "memoryd-embed", "instance": "e1"},
        "memoryd-embed on e1 cannot open 2 stored secret(s)",
    ),
    _case(
        "an embed backlog growing by 20 a minute (a flat extract backlog is no alarm)",
        {
            'memoryd_queue_lag_messages{consumer="embed", instance="e1"}': _counter(20),
            'memoryd_queue_lag_messages{consumer="extract", instance="x1"}': "500x40",
        },
        "MemorydQueueLagGrowing",
        "30m",
        {"severity": "warning", "consumer": "embed"},
        "consumer embed has 600 pending messages and the backlog grows",
    ),
    _case(
        "three dead letters of extract",
        {'memoryd_dlq_total{stage="extract"}': "0x9 3x10", 'memoryd_dlq_total{stage="embed"}': "0x20"},
        "MemorydDeadLettersGrowing",
        "20m",
        {"severity": "warning", "stage": "extract"},
        "3 message(s) of stage extract went to the DLQ in 15 minutes",
    ),
    _case(
        "the oldest job past 80 % of the stream's max age (a stream without one is no alarm)",
        {
            'memoryd_stream_oldest_unprocessed_age_seconds{stream="MEM_JOBS"}': "0+60x20",
            'memoryd_stream_max_age_seconds{stream="MEM_JOBS"}': "1000x20",
            'memoryd_stream_oldest_unprocessed_age_seconds{stream="MEM_EVENTS"}': "5000x20",
            'memoryd_stream_max_age_seconds{stream="MEM_EVENTS"}': "0x20",
        },
        "MemorydStreamNearMaxAge",
        "20m",
        {"severity": "critical", "stream": "MEM_JOBS"},
        "stream MEM_JOBS: the oldest unprocessed message is at 120% of the max age",
    ),
    _case(
        "a third of embed jobs retried",
        {
            'memoryd_jobs_total{stage="embed", outcome="acked"}': _counter(10),
            'memoryd_jobs_total{stage="embed", outcome="retry"}': _counter(5),
            'memoryd_jobs_total{stage="extract", outcome="acked"}': _counter(10),
        },
        "MemorydJobFailureRatioHigh",
        "25m",
        {"severity": "warning", "stage": "embed"},
        "33.33% of embed jobs fail",
    ),
    _case(
        "one retrieve RPC in ten answered 503",
        {
            'memoryd_rpc_requests_total{service="retrieve", op="retrieve", code="200"}': _counter(90),
            'memoryd_rpc_requests_total{service="retrieve", op="retrieve", code="503"}': _counter(10),
            'memoryd_rpc_requests_total{service="retrieve", op="inject", code="200"}': _counter(90),
        },
        "MemorydRpcErrorRatioHigh",
        "25m",
        {"severity": "critical", "service": "retrieve", "op": "retrieve"},
        "10% of retrieve retrieve RPCs fail with 5xx",
    ),
    _case(
        "one search in ten answered 503 by the gateway",
        {
            'memoryd_http_requests_total{route="/v1/search", method="POST", status="200"}': _counter(90),
            'memoryd_http_requests_total{route="/v1/search", method="POST", status="503"}': _counter(10),
            'memoryd_http_requests_total{route="/v1/memories", method="GET", status="200"}': _counter(90),
        },
        "MemorydHttpErrorRatioHigh",
        "25m",
        {"severity": "critical", "route": "/v1/search"},
        "10% of gateway requests to /v1/search fail with 5xx",
    ),
    _case(
        "one proxied call in five without an answer from the upstream",
        {
            'memoryd_proxy_upstream_duration_seconds_count{status="200"}': _counter(8),
            'memoryd_proxy_upstream_duration_seconds_count{status="unreachable"}': _counter(2),
        },
        "MemorydProxyUpstreamFailing",
        "25m",
        {"severity": "warning"},
        "20% of proxied chat calls get an error or no answer from the upstream LLM",
    ),
    _case(
        "one proxied call in five without memory",
        {
            'memoryd_proxy_memory_total{outcome="injected"}': _counter(8),
            'memoryd_proxy_memory_total{outcome="unavailable"}': _counter(2),
        },
        "MemorydProxyWithoutMemory",
        "25m",
        {"severity": "warning"},
        "20% of proxied chat calls went ahead without memory",
    ),
    _case(
        "retrievals between 250 and 500 ms (injections under 250 ms are within budget)",
        {
            'memoryd_rpc_seconds_bucket{service="retrieve", op="retrieve", le="0.25"}': "0x30",
            'memoryd_rpc_seconds_bucket{service="retrieve", op="retrieve", le="0.5"}': _counter(10, 30),
            'memoryd_rpc_seconds_bucket{service="retrieve", op="retrieve", le="+Inf"}': _counter(10, 30),
            'memoryd_rpc_seconds_bucket{service="retrieve", op="inject", le="0.25"}': _counter(10, 30),
            'memoryd_rpc_seconds_bucket{service="retrieve", op="inject", le="+Inf"}': _counter(10, 30),
        },
        "MemorydRetrieveP99OverBudget",
        "25m",
        {"severity": "warning", "op": "retrieve"},
        "retrieve retrieve p99 is 497.5ms (budget 250 ms)",
    ),
    _case(
        "searches between 0.5 and 1 s at the gateway",
        {
            f'{SEARCH_BUCKET}, le="0.5"}}': "0x30",
            f'{SEARCH_BUCKET}, le="1"}}': _counter(10, 30),
            f'{SEARCH_BUCKET}, le="+Inf"}}': _counter(10, 30),
        },
        "MemorydGatewayP99OverBudget",
        "25m",
        {"severity": "warning", "route": "/v1/search"},
        "gateway /v1/search p99 is 995ms (budget 500 ms)",
    ),
    _case(
        "an owner's third failed sleep run in a row",
        {"memoryd_sleep_failure_streak_runs": "0 2 3"},
        "MemorydSleepFailureStreak",
        "2m",
        {"severity": "warning"},
        "an owner's last 3 sleep runs all failed",
    ),
]


def rules() -> dict[str, dict[str, Any]]:
    groups = yaml.safe_load(ALERTS.read_text(encoding="utf-8"))["groups"]
    return {rule["alert"]: rule for group in groups for rule in group["rules"]}


def promtool_tests() -> dict[str, Any]:
    defined = rules()
    tests = []
    for case in CASES:
        rule = defined[case["alert"]]
        expected = {
            "exp_labels": case["labels"],
            "exp_annotations": {"summary": case["summary"], "description": rule["annotations"]["description"]},
        }
        tests.append(
            {
                "name": case["name"],
                "interval": "1m",
                "input_series": [{"series": s, "values": v} for s, v in case["series"].items()],
                "alert_rule_test": [{"eval_time": case["at"], "alertname": case["alert"], "exp_alerts": [expected]}],
            }
        )
    return {"rule_files": [str(ALERTS)], "evaluation_interval": "1m", "tests": tests}


def test_every_alert_has_a_case() -> None:
    assert sorted(c["alert"] for c in CASES) == sorted(rules())


def test_each_alert_fires_on_its_condition_with_what_on_call_reads(tmp_path: Path) -> None:
    _prometheus, promtool = prometheus_paths()
    spec = tmp_path / "alerts_test.yml"
    spec.write_text(yaml.safe_dump(promtool_tests(), sort_keys=False))
    out = subprocess.run([promtool, "test", "rules", str(spec)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "SUCCESS" in out.stdout


def test_a_healthy_system_raises_no_alert(tmp_path: Path) -> None:
    """The quiet neighbours of every case, alone: nothing fires."""
    _prometheus, promtool = prometheus_paths()
    healthy = {
        'up{job="memoryd-embed", instance="e1:9100"}': "1x40",
        'memoryd_secrets_unavailable_keys{job="memoryd-ingest", instance="i1"}': "0x40",
        'memoryd_queue_lag_messages{consumer="extract", instance="x1"}': "500x40",
        'memoryd_dlq_total{stage="embed"}': "0x40",
        'memoryd_stream_oldest_unprocessed_age_seconds{stream="MEM_EVENTS"}': "5000x40",
        'memoryd_stream_max_age_seconds{stream="MEM_EVENTS"}': "0x40",
        'memoryd_jobs_total{stage="extract", outcome="acked"}': _counter(10),
        'memoryd_rpc_requests_total{service="retrieve", op="inject", code="200"}': _counter(90),
        'memoryd_http_requests_total{route="/v1/memories", method="GET", status="200"}': _counter(90),
        'memoryd_proxy_upstream_duration_seconds_count{status="200"}': _counter(8),
        'memoryd_proxy_memory_total{outcome="injected"}': _counter(8),
        'memoryd_rpc_seconds_bucket{service="retrieve", op="inject", le="0.25"}': _counter(10),
        'memoryd_rpc_seconds_bucket{service="retrieve", op="inject", le="+Inf"}': _counter(10),
        "memoryd_sleep_failure_streak_runs": "0 2 2 0x37",
    }
    spec = {
        "rule_files": [str(ALERTS)],
        "evaluation_interval": "1m",
        "tests": [
            {
                "name": "healthy",
                "interval": "1m",
                "input_series": [{"series": s, "values": v} for s, v in healthy.items()],
                "alert_rule_test": [
                    {"eval_time": t, "alertname": name, "exp_alerts": []} for name in rules() for t in ("10m", "35m")
                ],
            }
        ],
    }
    path = tmp_path / "healthy_test.yml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    out = subprocess.run([promtool, "test", "rules", str(path)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
