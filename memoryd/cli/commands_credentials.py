"""``memoryd credentials``: owner-bound client users of the embedded NATS server.

- ``add-client NAME --owner O [--owner O2 ...]``: a NATS user that may only publish chat
  events and call the client RPCs *for those owners* (``mem.v1.events.chat.<owner>``,
  ``mem.v1.rpc.<op>.<owner>``; the services check the payload's owner against the subject).
  Prints the user's NATS URL and writes ``<data-dir>/clients/NAME.json``, a credentials
  file ``MemoryClient.connect(credentials=...)`` reads (it names the owners, so the client
  knows its subjects). Running it again re-binds the user and keeps its password.
- ``remove-client NAME`` and ``list`` (names and owners, never passwords).

The users live in ``<data-dir>/credentials.json`` (0600) and are rendered to
``<data-dir>/nats/auth.conf`` (0600); a running ``memoryd up`` picks a change up at once
(nats-server reloads its configuration on SIGHUP), otherwise at its next start.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote

import click

from memoryd.cli.common import CONTEXT_SETTINGS, data_dir
from memoryd.credentials import ClientCredentials, split_url, write_file
from memoryd.errors import ConfigError
from memoryd.subjects import inbox_prefix

if TYPE_CHECKING:
    from shared.nats_auth import Credentials

F = TypeVar("F", bound=Callable[..., Any])


def _data_dir_option(f: F) -> F:
    return click.option("--data-dir", "data_dir_flag", metavar="DIR", help="default: $MEMORYD_DATA_DIR or .memoryd")(f)


def _load(where: Path) -> Credentials:
    from memoryd.local.up import credentials_file
    from shared.nats_auth import Credentials

    if not credentials_file(where).exists():
        raise ConfigError("--data-dir", f"no credentials in {where}: run `memoryd up` there first")
    return Credentials.load_or_create(credentials_file(where))


def _apply(where: Path, creds: Credentials) -> str:
    from memoryd.local.nats import signal_reload
    from memoryd.local.up import credentials_file, nats_dir, write_nats_auth

    creds.save(credentials_file(where))
    write_nats_auth(where, creds)
    if signal_reload(nats_dir(where)):
        return "applied to the running nats-server"
    return "applies when `memoryd up` next starts"


def _client_url(where: Path, user: str, password: str) -> str:
    """The running server's address with this user's credentials (placeholder host if stopped)."""
    from memoryd.local.up import runtime_file

    address = "127.0.0.1:4222"
    try:
        known = json.loads(runtime_file(where).read_text())["client_nats_url"]
        address = known.rsplit("@", 1)[-1].split("://", 1)[-1]
    except (OSError, KeyError, ValueError):
        pass
    return f"nats://{user}:{quote(password, safe='')}@{address}"


def bound_client_file(where: Path, user: str) -> Path:
    """The credentials file ``add-client`` writes for an owner-bound user."""
    return where / "clients" / f"{user}.json"


@click.group("credentials", context_settings=CONTEXT_SETTINGS)
def credentials() -> None:
    """Owner-bound NATS client users of `memoryd up`."""


@credentials.command("add-client", context_settings=CONTEXT_SETTINGS)
@click.argument("name")
@click.option("--owner", "owners", multiple=True, required=True, metavar="OWNER", help="repeatable")
@_data_dir_option
def add_client(name: str, owners: tuple[str, ...], data_dir_flag: str | None) -> int:
    """Create or re-bind a client user for some owners.

    Prints the user's NATS URL and writes DIR/clients/NAME.json (a credentials file naming
    the owners); running it again keeps the password.
    """
    where = data_dir(data_dir_flag)
    creds = _load(where)
    try:
        password = creds.add_bound_client(name, list(owners))
    except ValueError as exc:
        print(f"memoryd credentials: {exc}", file=sys.stderr)
        return 2
    status = _apply(where, creds)
    url = _client_url(where, name, password)
    bound = creds.bound_owners[name]
    path = bound_client_file(where, name)
    write_file(
        path,
        ClientCredentials(
            url=split_url(url)[0], user=name, password=password, inbox_prefix=inbox_prefix(name), owners=bound
        ),
    )
    print(url)
    print(f"client {name} bound to owners {', '.join(bound)}; {status}; credentials file {path}", file=sys.stderr)
    return 0


@credentials.command("remove-client", context_settings=CONTEXT_SETTINGS)
@click.argument("name")
@_data_dir_option
def remove_client(name: str, data_dir_flag: str | None) -> int:
    """Remove an owner-bound client user."""
    where = data_dir(data_dir_flag)
    creds = _load(where)
    if not creds.remove_bound_client(name):
        print(f"memoryd credentials: no owner-bound client named {name!r}", file=sys.stderr)
        return 1
    bound_client_file(where, name).unlink(missing_ok=True)
    print(f"client {name} removed; {_apply(where, creds)}", file=sys.stderr)
    return 0


@credentials.command("list", context_settings=CONTEXT_SETTINGS)
@_data_dir_option
def list_clients(data_dir_flag: str | None) -> int:
    """List the client users and their owners.

    One tab-separated line per user; passwords are never shown.
    """
    creds = _load(data_dir(data_dir_flag))
    for user, owners in sorted(creds.bound_owners.items()):
        print(f"{user}\t{','.join(owners)}")
    return 0


COMMANDS = (credentials,)
