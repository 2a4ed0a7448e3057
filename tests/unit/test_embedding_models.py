"""``GET /v1/embedding/models``'s read-out from the effective engine settings (pure)."""

from __future__ import annotations

from services.embed.adapters.onnx import DIM, MODEL_NAME
from services.gateway.studio.embedding import models_of


def test_defaults_use_the_shipped_local_model() -> None:
    out = models_of({"embeddingSource": "auto", "embeddingUrl": None, "embeddingModel": None, "embeddingDim": None})
    assert out.sources == ["auto", "local", "remote"] and out.quantizations == ["none", "dynamic-int8"]
    assert (out.source, out.resolves_to, out.quantization) == ("auto", "local", "none")
    local, remote = out.models
    assert (local.model, local.dim, local.configured, local.in_use) == (MODEL_NAME, DIM, True, True)
    assert (local.model, local.dim) == ("all-MiniLM-L6-v2", 384)
    assert (remote.model, remote.dim, remote.configured, remote.in_use) == (None, None, False, False)


def test_auto_with_a_remote_url_uses_the_configured_remote_model() -> None:
    settings = {
        "embeddingSource": "auto",
        "embeddingUrl": "http://embed.example/v1",
        "embeddingModel": "text-embedding-3-small",
        "embeddingDim": 1536,
        "embeddingQuantization": "none",
    }
    out = models_of(settings)
    local, remote = out.models
    assert out.resolves_to == "remote" and not local.in_use
    assert (remote.model, remote.dim, remote.configured, remote.in_use) == ("text-embedding-3-small", 1536, True, True)
    assert "http" not in repr(out)  # the URL stays out


def test_an_explicit_local_source_ignores_a_configured_remote() -> None:
    out = models_of(
        {"embeddingSource": "local", "embeddingUrl": "http://e/v1", "embeddingModel": "m", "embeddingDim": 8}
    )
    assert out.resolves_to == "local" and out.models[0].in_use and not out.models[1].in_use
    assert out.models[1].configured
