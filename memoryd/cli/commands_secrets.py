"""``memoryd secrets generate-key``: a key for sealing secrets at rest (``MEMORYD_SECRETS_KEY``).

Prints a new 256-bit key in URL-safe base64, or with ``--file PATH`` writes it to a new file
(mode 0600) that ``MEMORYD_SECRETS_KEY_FILE`` can name. To rotate, put a new key on the first
line of that file and keep the old ones below it: the first line seals, every line opens.
``memoryd up`` makes ``<data-dir>/secrets.key`` by itself; this is for deployments.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from memoryd.cli.common import CONTEXT_SETTINGS
from memoryd.errors import ConfigError


@click.group("secrets", context_settings=CONTEXT_SETTINGS)
def secrets() -> None:
    """Keys that seal secrets stored in the database."""


@secrets.command("generate-key", context_settings=CONTEXT_SETTINGS)
@click.option("--file", "path", type=click.Path(dir_okay=False, path_type=Path), help="write it here (0600, new file)")
def generate_key(path: Path | None) -> int:
    """Print a new key (--file: write it to a new file).

    For MEMORYD_SECRETS_KEY, or MEMORYD_SECRETS_KEY_FILE with --file.
    """
    from shared.secrets import generate_key as new_key

    key = new_key()
    if path is None:
        click.echo(key)
        return 0
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise ConfigError("--file", f"{path} exists: a key file is never overwritten (add a line to rotate)") from None
    except OSError as exc:
        raise ConfigError("--file", f"cannot create {path}: {exc.strerror}") from None
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(key + "\n")
    click.echo(f"wrote a new key to {path}; set MEMORYD_SECRETS_KEY_FILE={path}", err=True)
    return 0


COMMANDS = (secrets,)
