"""``memoryd credentials``: owner-bound client users of the embedded NATS server.

- ``add-client NAME --owner O [--owner O2 ...]``: a NATS user that may only publish chat
  events and call the client RPCs *for those owners* (``mem.v1.events.chat.<owner>``,
  ``mem.v1.rpc.<op>.<owner>``; the services check the payload's owner against the subject).
  Prints the user's NATS URL. Running it again re-binds the user and keeps its password.
- ``remove-client NAME`` and ``list`` (names and owners, never passwords).

The users live in ``<data-dir>/credentials.json`` (0600) and are rendered to
``<data-dir>/nats/auth.conf`` (0600); a running ``memoryd up`` picks a change up at once
(nats-server reloads its configuration on SIGHUP), otherwise at its next start.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from urllib.parse import quote

from memoryd.cli.commands_server import _data_dir
from memoryd.local.nats import signal_reload
from memoryd.local.up import credentials_file, nats_dir, runtime_file, write_nats_auth
from shared.errors import ConfigError
from shared.nats_auth import Credentials


def _load(data_dir: Path) -> Credentials:
    if not credentials_file(data_dir).exists():
        raise ConfigError("--data-dir", f"no credentials in {data_dir}: run `memoryd up` there first")
    return Credentials.load_or_create(credentials_file(data_dir))


def _apply(data_dir: Path, creds: Credentials) -> str:
    creds.save(credentials_file(data_dir))
    write_nats_auth(data_dir, creds)
    if signal_reload(nats_dir(data_dir)):
        return "applied to the running nats-server"
    return "applies when `memoryd up` next starts"


def _client_url(data_dir: Path, user: str, password: str) -> str:
    """The running server's address with this user's credentials (placeholder host if stopped)."""
    address = "127.0.0.1:4222"
    try:
        known = json.loads(runtime_file(data_dir).read_text())["client_nats_url"]
        address = known.rsplit("@", 1)[-1].split("://", 1)[-1]
    except (OSError, KeyError, ValueError):
        pass
    return f"nats://{user}:{quote(password, safe='')}@{address}"


def cmd_add_client(args: argparse.Namespace) -> int:
    data_dir = _data_dir(args.data_dir)
    creds = _load(data_dir)
    try:
        password = creds.add_bound_client(args.name, list(args.owner))
    except ValueError as exc:
        print(f"memoryd credentials: {exc}", file=sys.stderr)
        return 2
    status = _apply(data_dir, creds)
    print(_client_url(data_dir, args.name, password))
    print(f"client {args.name} bound to owners {', '.join(creds.bound_owners[args.name])}; {status}", file=sys.stderr)
    return 0


def cmd_remove_client(args: argparse.Namespace) -> int:
    data_dir = _data_dir(args.data_dir)
    creds = _load(data_dir)
    if not creds.remove_bound_client(args.name):
        print(f"memoryd credentials: no owner-bound client named {args.name!r}", file=sys.stderr)
        return 1
    print(f"client {args.name} removed; {_apply(data_dir, creds)}", file=sys.stderr)
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    creds = _load(_data_dir(args.data_dir))
    for user, owners in sorted(creds.bound_owners.items()):
        print(f"{user}\t{','.join(owners)}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    group = sub.add_parser("credentials", help="owner-bound NATS client users of `memoryd up`")
    actions = group.add_subparsers(dest="action", required=True, metavar="ACTION")
    add = actions.add_parser("add-client", help="create or re-bind a client user for some owners")
    add.add_argument("name")
    add.add_argument("--owner", action="append", required=True, help="repeatable")
    add.set_defaults(func=cmd_add_client)
    remove = actions.add_parser("remove-client", help="remove an owner-bound client user")
    remove.add_argument("name")
    remove.set_defaults(func=cmd_remove_client)
    listing = actions.add_parser("list", help="owner-bound client users and their owners")
    listing.set_defaults(func=cmd_list)
    for parser in (add, remove, listing):
        parser.add_argument("--data-dir", help="default: $MEMORYD_DATA_DIR or .memoryd")
