"""Sleep settings: defaults, camelCase wire names, range validation, layering, thresholds."""

import msgspec
import pytest

from memoryd.errors import ValidationFailed
from services.sleep.logic.settings import SleepSettings, strictness_threshold
from shared.settings.memory import effective_sleep

DEFAULTS = {
    "sleepModeEnabled": False,
    "sleepIdleMinutes": 5,
    "sleepMinIntervalHours": 8,
    "sleepFailureBackoff": False,
    "sleepConflictStrictness": "normal",
    "sleepConflictMaxPairs": 12,
    "sleepConflictMaxPairsPerRun": 60,
    "sleepActionSet": "default",
    "sleepArchiveDays": 30,
    "sleepCompressDays": 90,
    "sleepPatternMinMemories": 100,
    "sleepPatternLookbackDays": 30,
    "sleepMaxPatternPerRun": 3,
    "sleepAffectiveEnabled": False,
    "sleepAffectiveTraitMinSessions": 3,
    "sleepAffectiveMaxRelationsPerRun": 10,
    "sleepMaxTokens": 8192,
    "sleepLlmModel": None,
    "sleepModel": None,
    "sleepProvider": None,
    "sleepReasoningEffort": None,
    "sleepMaxConcurrentRuns": 1,
    "sleepCountReads": False,
    "sleepAffectiveMinPool": 5,
    "conflictFreezeEnabled": False,
    "reflectionUpdateMaxPerRun": 10,
    # the knobs that were MEMORYD_SLEEP_* variables: they change what a run does
    "sleepNeighboursPerMemory": 5,
    "sleepFullScanDays": 7,
    "sleepPatternPool": 200,
    "sleepAffectivePool": 200,
    "sleepPromptChars": 300,
    "sleepRelationMinCount": 1,
    "sleepRelationMaxEdges": 3,
}


def test_defaults_encode_with_the_camel_case_names_of_the_issue() -> None:
    assert msgspec.to_builtins(SleepSettings()) == DEFAULTS


def test_decode_reads_camel_case_and_ignores_other_services_keys() -> None:
    settings = effective_sleep(
        {"sleepModeEnabled": True, "sleepIdleMinutes": 10, "maxTokens": 2000, "sleepLlmModel": "gpt-x"}, {}
    )
    assert settings.sleep_mode_enabled is True
    assert settings.sleep_idle_minutes == 10
    assert settings.sleep_llm_model == "gpt-x"
    assert settings.sleep_min_interval_hours == 8


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("sleepAffectiveTraitMinSessions", 1),
        ("sleepAffectiveTraitMinSessions", 11),
        ("sleepAffectiveMaxRelationsPerRun", -1),
        ("sleepAffectiveMaxRelationsPerRun", 51),
        ("sleepIdleMinutes", -1),
        ("sleepMinIntervalHours", 0),
        ("sleepConflictMaxPairs", -3),
        ("sleepConflictStrictness", "brutal"),
        ("sleepActionSet", "everything"),
        ("sleepLlmModel", ""),
        ("sleepMaxTokens", 10),
    ],
)
def test_out_of_range_value_names_the_field(field: str, value: object) -> None:
    with pytest.raises(ValidationFailed) as info:
        effective_sleep({field: value}, {})
    assert f"$.{field}" in info.value.description


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("sleepAffectiveTraitMinSessions", 2),
        ("sleepAffectiveTraitMinSessions", 10),
        ("sleepAffectiveMaxRelationsPerRun", 0),
        ("sleepAffectiveMaxRelationsPerRun", 50),
    ],
)
def test_range_bounds_are_inclusive(field: str, value: int) -> None:
    assert msgspec.to_builtins(effective_sleep({field: value}, {}))[field] == value


def test_compress_days_below_archive_days_is_rejected_naming_both() -> None:
    with pytest.raises(ValidationFailed) as info:
        effective_sleep({"sleepArchiveDays": 30, "sleepCompressDays": 10}, {})
    assert "sleepCompressDays (10)" in info.value.description
    assert "sleepArchiveDays (30)" in info.value.description


def test_owner_layer_overrides_global_key_by_key() -> None:
    settings = effective_sleep(
        {"sleepModeEnabled": True, "sleepIdleMinutes": 15, "sleepLlmModel": "global-model"},
        {"sleepIdleMinutes": 2, "sleepLlmModel": None},
    )
    assert settings.sleep_mode_enabled is True
    assert settings.sleep_idle_minutes == 2
    assert settings.sleep_llm_model is None


def test_settings_are_frozen() -> None:
    settings = SleepSettings()
    with pytest.raises(AttributeError):
        settings.sleep_idle_minutes = 1  # type: ignore[misc]


@pytest.mark.parametrize(("name", "threshold"), [("gentle", 0.92), ("normal", 0.85), ("aggressive", 0.75)])
def test_strictness_threshold(name: str, threshold: float) -> None:
    assert strictness_threshold(name) == threshold


def test_unknown_strictness_names_the_setting() -> None:
    with pytest.raises(ValueError, match="sleepConflictStrictness 'wild'"):
        strictness_threshold("wild")


def test_the_llm_route_comes_from_sleep_model_provider_and_effort() -> None:
    assert SleepSettings().llm_model("base") == "base"
    assert SleepSettings(sleep_llm_model="old").llm_model("base") == "old"
    assert SleepSettings(sleep_llm_model="old", sleep_model="new").llm_model("base") == "new"
    assert SleepSettings(sleep_provider="openai").llm_model("base") == "openai/base"
    assert SleepSettings(sleep_provider="anthropic", sleep_model="m").llm_model(None) == "anthropic/m"
    assert SleepSettings().llm_model(None) is None
    with pytest.raises(ValidationFailed, match="sleepReasoningEffort"):
        effective_sleep({"sleepReasoningEffort": "extreme"}, {})
    with pytest.raises(ValidationFailed, match="sleepProvider"):
        effective_sleep({"sleepProvider": "a/b"}, {})
    with pytest.raises(ValidationFailed, match="sleepMaxConcurrentRuns"):
        effective_sleep({"sleepMaxConcurrentRuns": 0}, {})


def test_a_sleep_variable_that_became_a_setting_stops_the_process_naming_it() -> None:
    import pytest

    from memoryd.errors import ConfigError
    from services.sleep.app import load_settings

    with pytest.raises(ConfigError, match="sleepPatternPool"):
        load_settings({"MEMORYD_SLEEP_PATTERN_POOL": "50"})
    assert load_settings({"MEMORYD_SLEEP_LANES": "2"}).lanes == 2
