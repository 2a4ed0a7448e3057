"""One ``memoryd up`` (authentication on, free ports) shared by the end-to-end tests that only
use it as applications do; tests that stop or restart a stack start their own."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.up import RunningUp, start_up


@pytest.fixture(scope="package")  # stopped when the e2e tests are done
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningUp]:
    up = start_up(tmp_path_factory.mktemp("up") / "data")
    try:
        yield up
    finally:
        up.stop()
