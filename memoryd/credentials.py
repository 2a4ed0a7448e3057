"""Where a client finds NATS and who it is there: URL, user, password, inbox prefix, owners.

``MemoryClient.connect()`` resolves its target in this order:

1. what the caller passes: a URL (credentials may be in it), ``user``/``password``, or a
   credentials file (its URL is used unless a URL is passed too);
2. with no argument, ``$MEMORYD_NATS_CREDENTIALS`` (a credentials file) and/or
   ``$MEMORYD_NATS_URL`` (the URL wins over the file's);
3. else the credentials file ``memoryd up`` writes, ``<data-dir>/client.json`` (data dir
   ``$MEMORYD_DATA_DIR``, default ``.memoryd``).

A credentials file is JSON ``{"url", "user", "password", "inbox_prefix", "owners"}``:
``owners`` absent or null is the application role (acts for any owner it serves); a list
binds the user to those owners (owner-bound subjects, see ``memoryd/subjects.py``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal
from urllib.parse import unquote, urlsplit, urlunsplit

import msgspec

from memoryd.errors import ConfigError
from memoryd.subjects import CLIENT_ROLE, OPERATOR_ROLE, inbox_prefix

#: The credentials file ``memoryd up`` writes for applications, in its data directory.
CLIENT_CREDENTIALS_FILE = "client.json"
DEFAULT_DATA_DIR = ".memoryd"
URL_ENV = "MEMORYD_NATS_URL"
CREDENTIALS_ENV = "MEMORYD_NATS_CREDENTIALS"
DATA_DIR_ENV = "MEMORYD_DATA_DIR"
#: ``application``: a trusted backend acting for the owners it serves (unbound subjects);
#: ``owner-bound``: may act only for its owners (``mem.v1.rpc.<op>.<owner>``).
Role = Literal["application", "owner-bound"]
#: Users of ``memoryd up`` that are application roles whatever a credentials file says.
APPLICATION_USERS = frozenset({CLIENT_ROLE, OPERATOR_ROLE})


class ClientCredentials(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Everything a client needs to connect and to pick its subjects."""

    url: str
    user: str | None = None
    password: str | None = None
    inbox_prefix: str | None = None
    #: An owner-bound user's owners (None: not known here, or the application role).
    owners: list[str] | None = None
    #: None: not known (a URL alone); the client then finds it out from the server's answers.
    role: Role | None = None

    def reply_prefix(self) -> str | None:
        """The inbox prefix to subscribe under (``_INBOX.<user>`` unless the file says otherwise)."""
        return self.inbox_prefix or (inbox_prefix(self.user) if self.user else None)


def data_dir(value: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    return Path(value or env.get(DATA_DIR_ENV) or DEFAULT_DATA_DIR)


def client_credentials_file(directory: Path) -> Path:
    return directory / CLIENT_CREDENTIALS_FILE


def split_url(url: str) -> tuple[str, str | None, str | None]:
    """``(url without credentials, user, password)``; comma-separated URLs share one user."""
    bare, user, password = [], None, None
    for server in url.split(","):
        parts = urlsplit(server.strip())
        if parts.username and user is None:
            user, password = unquote(parts.username), unquote(parts.password or "") or None
        host = parts.hostname or ""
        netloc = f"[{host}]" if ":" in host else host
        if parts.port is not None:
            netloc = f"{netloc}:{parts.port}"
        bare.append(urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment)))
    return ",".join(bare), user, password


def read_file(path: Path, setting: str = CREDENTIALS_ENV) -> ClientCredentials:
    """A credentials file, or ``ConfigError`` naming ``setting`` and the path."""
    try:
        return msgspec.json.decode(path.read_bytes(), type=ClientCredentials)
    except OSError as exc:
        raise ConfigError(setting, f"cannot read credentials file {path}: {exc.strerror or exc}") from exc
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise ConfigError(setting, f"credentials file {path} is not valid: {exc}") from exc


def write_file(path: Path, creds: ClientCredentials) -> None:
    """Write a credentials file only its owner can read."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(msgspec.json.format(msgspec.json.encode(creds), indent=2) + b"\n")
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


def resolve(
    url: str | None = None,
    *,
    user: str | None = None,
    password: str | None = None,
    credentials: str | os.PathLike[str] | None = None,
    owners: Sequence[str] | None = None,
    data_dir_path: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> ClientCredentials:
    """The credentials a client connects with (see the module docstring for the order)."""
    env = os.environ if env is None else env
    base: ClientCredentials | None = None
    if credentials is not None:
        base = read_file(Path(credentials), "credentials")
    elif url is None and user is None:
        url = env.get(URL_ENV) or None
        if env.get(CREDENTIALS_ENV):
            base = read_file(Path(env[CREDENTIALS_ENV]))
        elif url is None:
            path = client_credentials_file(data_dir(data_dir_path, env))
            if not path.exists():
                raise ConfigError(
                    URL_ENV, f"not set, nor {CREDENTIALS_ENV}, and there is no {path} (is `memoryd up` running here?)"
                )
            base = read_file(path, DATA_DIR_ENV)
    target = url or (base.url if base else None)
    if not target:
        raise ConfigError(URL_ENV, "no NATS URL given")
    bare, url_user, url_password = split_url(target)
    chosen_user = user or url_user or (base.user if base else None)
    if user:
        chosen_password = password
    elif url_user:
        chosen_password = url_password
    else:
        chosen_password = password or (base.password if base else None)
    from_file = base if base is not None and base.user == chosen_user else None
    chosen_owners = sorted(set(owners)) if owners is not None else (from_file.owners if from_file else None)
    role: Role | None
    if chosen_owners is not None:
        role = "owner-bound"
    elif from_file is not None:
        role = from_file.role or "application"
    elif chosen_user is None or chosen_user in APPLICATION_USERS:
        role = "application"
    else:
        role = None
    return ClientCredentials(
        url=bare,
        user=chosen_user,
        password=chosen_password,
        inbox_prefix=from_file.inbox_prefix if from_file else None,
        owners=chosen_owners,
        role=role,
    )
