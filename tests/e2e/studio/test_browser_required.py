"""The browser tests never pass silently without a browser: under CI a missing Chromium fails."""

from __future__ import annotations

import pytest

from .conftest import chromium_path


def test_missing_browser_fails_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORYD_CHROMIUM", "/nonexistent/chromium")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="apt-get install -y chromium"):
        chromium_path()
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="/nonexistent/chromium"):
        chromium_path()
