"""Each service reads its environment once, through its ``load_settings``, into one frozen Struct."""

from __future__ import annotations

import importlib

import msgspec
import pytest

from memoryd.errors import ConfigError
from shared.service import main

SERVICES = ("embed", "extract", "ingest", "retrieve", "sleep")


@pytest.mark.parametrize("name", SERVICES)
def test_an_empty_environment_gives_the_defaults(name: str) -> None:
    app = importlib.import_module(f"services.{name}.app")
    settings = app.load_settings({})
    assert isinstance(settings, msgspec.Struct)
    assert settings == type(settings)()  # every field has its default
    with pytest.raises(AttributeError):
        settings.anything = 1  # frozen


@pytest.mark.parametrize(
    ("name", "variable", "value"),
    [
        ("embed", "MEMORYD_EMBED_BATCH_MAX", "0"),
        ("extract", "MEMORYD_EXTRACT_BATCH", "many"),
        ("ingest", "MEMORYD_INGEST_BATCH", "0"),
        ("ingest", "MEMORYD_EMBED_SOURCE", "cloud"),
        ("retrieve", "MEMORYD_RETRIEVE_RERANK_TIMEOUT_S", "0"),
        ("sleep", "MEMORYD_SLEEP_TICK_S", "-1"),
    ],
)
def test_a_bad_value_names_the_variable(name: str, variable: str, value: str) -> None:
    app = importlib.import_module(f"services.{name}.app")
    with pytest.raises(ConfigError) as info:
        app.load_settings({variable: value})
    assert info.value.setting == variable


def test_values_reach_the_struct() -> None:
    retrieve = importlib.import_module("services.retrieve.app")
    env = {"MEMORYD_RETRIEVE_EMBED_TIMEOUT_S": "2.5", "MEMORYD_RETRIEVE_RERANK_MAX_CHARS": "100"}
    got = retrieve.load_settings(env)
    assert (got.engine.embed_timeout_s, got.rerank.max_chars) == (2.5, 100)
    embed = importlib.import_module("services.embed.app").load_settings({"MEMORYD_DATA_DIR": "/srv/m"})
    assert embed.data.data_dir == "/srv/m"


@pytest.mark.parametrize(
    ("variable", "setting"),
    [
        ("MEMORYD_RETRIEVE_SESSION_BOOST", "sessionBoost"),
        ("MEMORYD_RETRIEVE_NEIGHBOUR_BOOST", "neighbourBoost"),
        ("MEMORYD_RETRIEVE_FTS_WEIGHT", "ftsWeight"),
        ("MEMORYD_RETRIEVE_VEC_WEIGHT", "vecWeight"),
    ],
)
def test_a_variable_that_became_a_runtime_setting_stops_the_process(
    variable: str, setting: str, capsys: pytest.CaptureFixture[str]
) -> None:
    app = importlib.import_module("services.retrieve.app")
    code = main("retrieve", app.setup, load_settings=app.load_settings, env={variable: "0"})
    assert code == 2
    err = capsys.readouterr().err
    assert variable in err and f"runtime setting {setting}" in err
