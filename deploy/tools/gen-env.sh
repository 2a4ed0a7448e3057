#!/bin/sh
# Writes the .env docker-compose.yml reads: .env.example with a random secret (48 hex digits)
# on every *_PASSWORD line, the file readable by its owner only. It never overwrites one.
#
#   sh deploy/tools/gen-env.sh            # .env next to docker-compose.yml
#   sh deploy/tools/gen-env.sh PATH       # somewhere else
set -eu

root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/.env}
if [ -e "$out" ]; then
  echo "gen-env: $out exists; delete it first to make new secrets (the running stack keeps the old ones)" >&2
  exit 1
fi

secret() { od -An -N24 -tx1 /dev/urandom | tr -d ' \n'; }

umask 077
tmp="$out.tmp.$$"
trap 'rm -f "$tmp"' EXIT
while IFS= read -r line || [ -n "$line" ]; do
  case "$line" in
    [A-Z]*_PASSWORD=) printf '%s%s\n' "$line" "$(secret)" ;;
    *) printf '%s\n' "$line" ;;
  esac
done < "$root/.env.example" > "$tmp"
mv "$tmp" "$out"
trap - EXIT
echo "gen-env: wrote $out" >&2
