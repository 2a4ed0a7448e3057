"""``GET /v1/embedding/models``: what a model picker needs, read from the effective engine settings.

The sources ``embeddingSource`` accepts, which one ``auto`` resolves to now, the local model
that ships with the embed service, and the remote model the settings configure (its name and
dimension; the URL and API key stay out). Pure: ``models_of`` maps ``settings.get`` values.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import msgspec

from shared.settings.engine import LOCAL_DIM, LOCAL_MODEL, EmbeddingSource, Quantization

SOURCES: tuple[str, ...] = EmbeddingSource.__args__  # type: ignore[attr-defined]
QUANTIZATIONS: tuple[str, ...] = Quantization.__args__  # type: ignore[attr-defined]


class EmbeddingModel(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    source: Literal["local", "remote"]
    model: str | None = None
    dim: int | None = None
    #: the local model always is; a remote one when the settings name its URL, model and dimension
    configured: bool = False
    #: what embeds now (``embeddingSource``, with ``auto`` resolved)
    in_use: bool = False


class EmbeddingModels(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """The choices of ``embeddingSource`` and ``embeddingQuantization``, what is set, and the models."""

    sources: list[str]
    source: str
    resolves_to: Literal["local", "remote"]
    models: list[EmbeddingModel]
    quantizations: list[str]
    quantization: str = "none"


def models_of(settings: Mapping[str, Any]) -> EmbeddingModels:
    """The read-out from the effective settings (``embeddingSource``, ``embeddingModel``, ...)."""
    source = str(settings.get("embeddingSource") or "auto")
    url_set = bool(settings.get("embeddingUrl"))
    remote = source == "remote" or (source == "auto" and url_set)
    model, dim = settings.get("embeddingModel"), settings.get("embeddingDim")
    return EmbeddingModels(
        sources=list(SOURCES),
        source=source,
        resolves_to="remote" if remote else "local",
        models=[
            EmbeddingModel(source="local", model=LOCAL_MODEL, dim=LOCAL_DIM, configured=True, in_use=not remote),
            EmbeddingModel(
                source="remote",
                model=str(model) if model else None,
                dim=int(dim) if isinstance(dim, int) else None,
                configured=url_set and bool(model) and isinstance(dim, int),
                in_use=remote,
            ),
        ],
        quantizations=list(QUANTIZATIONS),
        quantization=str(settings.get("embeddingQuantization") or "none"),
    )
