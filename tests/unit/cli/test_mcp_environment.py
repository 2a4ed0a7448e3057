"""``memoryd mcp`` hands the stdio server its NATS identity in the environment, never in argv."""

from __future__ import annotations

from pathlib import Path

import pytest

from memoryd.cli.commands_keys import mcp_environment, mcp_owner_user
from memoryd.credentials import CREDENTIALS_ENV, URL_ENV
from memoryd.errors import ConfigError

URL = "nats://app:s3cret@127.0.0.1:4222"


def test_a_url_given_on_the_command_line_moves_to_the_environment() -> None:
    env = mcp_environment("alice", URL, None, None, {CREDENTIALS_ENV: "/elsewhere.json", "HOME": "/h"})
    assert env == {URL_ENV: URL, "HOME": "/h"}


def test_a_credentials_file_wins_and_is_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    env = mcp_environment("alice", URL, "alice.json", None, {URL_ENV: URL})
    assert env == {CREDENTIALS_ENV: str(tmp_path / "alice.json")}


def test_the_environment_is_kept_when_it_names_nats() -> None:
    assert mcp_environment("alice", None, None, None, {URL_ENV: URL}) == {URL_ENV: URL}


def test_without_a_running_memoryd_up_it_says_so(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is `memoryd up` running there"):
        mcp_environment("alice", None, None, str(tmp_path), {})


def test_the_owner_user_is_a_valid_client_name_for_any_owner() -> None:
    from shared.nats_auth import check_bound_client

    for owner in ("alice", "ana:team", "Ünïcode owner?"):
        user = mcp_owner_user(owner)
        assert user.startswith("mcp-") and len(user) == 20
        check_bound_client(user, ["alice"])
    assert mcp_owner_user("alice") != mcp_owner_user("Alice")
