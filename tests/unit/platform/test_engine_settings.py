"""Engine settings: environment <- global row, one merge; combinations refused naming the field;
API keys redacted; engine keys global only; CLI values typed by the setting."""

from __future__ import annotations

from typing import Any

import pytest

from memoryd.cli.commands_settings import parse_value
from memoryd.errors import ValidationFailed
from services.embed.settings import EmbedSettings
from shared.settings.engine import (
    REDACTED,
    EmbeddingConfig,
    EngineChoice,
    effective_engine,
    engine_view,
    global_only,
    qdrant_in_use,
    reattached,
    usable_engine,
)
from shared.settings.env import QdrantConfig
from shared.settings.memory import effective, text_setting_names, validate_update

ENV_QDRANT = QdrantConfig(url="http://qdrant:6333", api_key="env-key", collection="mem")


def test_environment_is_the_default_and_the_global_row_overrides_it() -> None:
    env = EmbedSettings(source="local", batch_max=8)
    base = effective_engine(env, ENV_QDRANT, {})
    assert base.embedding == env and base.qdrant == ENV_QDRANT and base.vector_store == "auto"
    assert base.qdrant_in_use == ENV_QDRANT
    row = {
        "embeddingSource": "remote",
        "embeddingUrl": "http://ollama:11434/v1",
        "embeddingModel": "nomic-embed-text:latest",
        "embeddingDim": 768,
        "qdrantCollection": "other",
        "maxTokens": 500,  # not an engine key: ignored here
    }
    choice = usable_engine(env, ENV_QDRANT, row)
    emb = choice.embedding
    assert isinstance(emb, EmbedSettings) and emb.batch_max == 8  # the service's own tuning is kept
    assert (emb.source, emb.remote_url, emb.remote_model, emb.remote_dim) == (
        "remote",
        "http://ollama:11434/v1",
        "nomic-embed-text:latest",
        768,
    )
    assert choice.qdrant == QdrantConfig(url="http://qdrant:6333", api_key="env-key", collection="other")


def test_vector_store_decides_which_qdrant_is_in_use() -> None:
    assert qdrant_in_use(ENV_QDRANT, {"vectorStore": "pgvector"}) is None
    assert qdrant_in_use(ENV_QDRANT, {"qdrantUrl": None}) is None  # null removes the environment's
    assert qdrant_in_use(QdrantConfig(), {}) is None
    local = qdrant_in_use(QdrantConfig(), {"vectorStore": "qdrant", "qdrantUrl": ":memory:"})
    assert local is not None and local.url == ":memory:"


@pytest.mark.parametrize(
    ("env", "row", "field"),
    [
        (EmbeddingConfig(), {"embeddingSource": "remote"}, "embeddingUrl"),
        (EmbeddingConfig(), {"embeddingSource": "remote", "embeddingUrl": "http://h/v1"}, "embeddingModel"),
        (EmbeddingConfig(), {"embeddingUrl": "http://h/v1", "embeddingModel": "m"}, "embeddingDim"),  # auto -> remote
        (
            EmbeddingConfig(remote_url="http://h/v1", remote_model="m", remote_dim=4),
            {"embeddingQuantization": "dynamic-int8"},
            "embeddingQuantization",
        ),
        (EmbeddingConfig(), {"vectorStore": "qdrant"}, "qdrantUrl"),
        (EmbeddingConfig(), {"embeddingSource": "magic"}, "embeddingSource"),
        (EmbeddingConfig(), {"embeddingUrl": "ftp://h/v1"}, "embeddingUrl"),
        (EmbeddingConfig(), {"embeddingDim": 0}, "embeddingDim"),
        (EmbeddingConfig(), {"embeddingDim": 16_001}, "embeddingDim"),
        (EmbeddingConfig(), {"embeddingModel": ""}, "embeddingModel"),
        (EmbeddingConfig(), {"qdrantUrl": "relative/dir"}, "qdrantUrl"),
        (EmbeddingConfig(), {"qdrantCollection": "no spaces"}, "qdrantCollection"),
        (EmbeddingConfig(), {"qdrantQuantization": "yes"}, "qdrantQuantization"),
        (EmbeddingConfig(), {"vectorStore": "fastest"}, "vectorStore"),
        (EmbeddingConfig(), {"vectorQuantization": "int4"}, "vectorQuantization"),
        (EmbeddingConfig(), {"vectorQuantization": None}, "vectorQuantization"),
    ],
)
def test_unusable_values_and_combinations_name_the_field(env: EmbeddingConfig, row: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationFailed, match=f"`\\$.*{field}`"):
        usable_engine(env, QdrantConfig(), row)


def test_usable_combinations() -> None:
    local = usable_engine(EmbeddingConfig(), QdrantConfig(), {"embeddingQuantization": "dynamic-int8"})
    assert local.embedding.quantization == "dynamic-int8" and not local.embedding.remote
    for url in (":memory:", "/var/lib/qdrant", "https://q.example:6333"):
        assert usable_engine(EmbeddingConfig(), QdrantConfig(), {"vectorStore": "qdrant", "qdrantUrl": url})


def test_vector_quantization_is_full_precision_unless_the_row_says_half() -> None:
    assert effective_engine(EmbeddingConfig(), QdrantConfig(), {}).vector_quantization == "none"
    half = usable_engine(EmbeddingConfig(), QdrantConfig(), {"vectorQuantization": "half"})
    assert half.vector_quantization == "half" and engine_view(half)["vectorQuantization"] == "half"
    assert half != effective_engine(EmbeddingConfig(), QdrantConfig(), {})  # a change the embed worker applies
    with pytest.raises(ValidationFailed, match="global-only"):
        global_only({"vectorQuantization": "half"})


def test_api_keys_are_shown_redacted() -> None:
    env = EngineChoice(embedding=EmbeddingConfig(remote_api_key="sk-env"), qdrant=ENV_QDRANT)
    view = engine_view(effective_engine(env.embedding, env.qdrant, {"qdrantApiKey": "q-secret"}))
    assert view["embeddingApiKey"] == REDACTED and view["qdrantApiKey"] == REDACTED
    assert "sk-env" not in repr(view) and "q-secret" not in repr(view)
    assert engine_view(effective_engine(EmbeddingConfig(), QdrantConfig(), {}))["embeddingApiKey"] is None
    assert view["qdrantUrl"] == "http://qdrant:6333" and view["vectorStore"] == "auto"


def test_engine_keys_are_global_only_and_rerank_is_per_owner() -> None:
    with pytest.raises(ValidationFailed, match="embeddingModel is global-only"):
        validate_update({}, {}, {"embeddingModel": "m"})
    with pytest.raises(ValidationFailed, match="qdrantUrl"):
        validate_update({}, {}, {"rerank": True, "qdrantUrl": ":memory:"})
    validate_update({}, {}, {"embeddingModel": "m"}, is_global=True)
    validate_update({}, {}, {"rerank": True, "rerankDepth": 50})
    with pytest.raises(ValidationFailed, match="rerankDepth"):
        validate_update({}, {}, {"rerankDepth": 1})
    with pytest.raises(ValidationFailed, match="embeddingDim"):
        validate_update({}, {}, {"embeddingDim": "big"}, is_global=True)
    settings = effective({"rerank": True, "embeddingModel": "m"}, {"rerankDepth": 7})
    assert settings.rerank and settings.rerank_depth == 7


def test_cli_values_follow_the_setting_type() -> None:
    assert {"embeddingApiKey", "embeddingModel", "qdrantUrl", "qdrantCollection"} <= text_setting_names()
    assert parse_value("12345", "embeddingApiKey") == "12345"
    assert parse_value("007", "qdrantCollection") == "007"
    assert parse_value("null", "qdrantUrl") is None
    assert parse_value("768", "embeddingDim") == 768
    assert parse_value("true", "rerank") is True
    assert parse_value("qdrant", "vectorStore") == "qdrant"


def test_a_row_describing_another_place_starts_afresh() -> None:
    assert not reattached({}, ":memory:#a")  # rows from before locations were recorded
    assert not reattached({"location": ":memory:#a"}, ":memory:#a")
    assert reattached({"location": ":memory:#a"}, ":memory:#b")
    assert reattached({"location": ":memory:#a", "detached": True}, ":memory:#a")
