"""Tier 2: vectors in Qdrant (``qdrant-client``, async), one collection per signature.

- Collection ``<prefix>_<sha256(signature)[:16]>`` holds the vectors of one signature
  (cosine distance; the signature and dimension are kept in the collection metadata);
  ``<prefix>_active`` is an alias switched by ``activate`` once a backfill is complete, so
  a model or dimension change never breaks search. ``search`` always names its signature.
- Point id = the memory UUID; the payload (``qdrant_filters``) mirrors the memory fields
  search filters on, indexed (``owner`` as the tenant key). ``update_payload`` mirrors
  later changes (archive, expiry, scope) into every collection.
- Optional int8 scalar quantization with rescoring (``quantization=True``), set on a new
  collection and applied to an existing one by ``ensure`` (``update_collection``); ``status``
  reports what the collection's config holds. qdrant-client's local mode (``:memory:`` or a
  path, used by tests) ignores quantization (brute force), and its status says so.
- Any backend failure becomes ``DependencyDown`` with the reason (server down, collection
  missing), so retrieve can fall back to pgvector; ``status`` reports instead of raising.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Awaitable, Sequence
from datetime import datetime
from typing import Any, TypeVar

import httpx
import numpy as np
from msgspec import UNSET, UnsetType
from qdrant_client import AsyncQdrantClient, models
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from memoryd.errors import DependencyDown

from . import qdrant_filters as qf
from .common import (
    as_uuid,
    as_vector,
    best_pairs,
    check_dim,
    check_items,
    check_patch,
    check_signature,
    clamp_limit,
    epoch,
    exact_pairs,
    merge_pairs,
    signature_hash,
)
from .port import Pair, StoreStatus, VectorHit, VectorItem, VectorQuery

T = TypeVar("T")
_BACKEND_ERRORS = (UnexpectedResponse, ResponseHandlingException, httpx.HTTPError, OSError, TimeoutError)
_WRITE_CHUNK = 256
_SCROLL_PAGE = 1000
_PROBE_CHUNK = 64


class QdrantStore:
    """The ``VectorStore`` port on Qdrant (tier 2)."""

    name = "qdrant"

    def __init__(
        self,
        client: AsyncQdrantClient,
        collection_prefix: str = "memoryd",
        *,
        quantization: bool = False,
        exact_max_points: int = 5000,
        hnsw_ef: int | None = None,
    ) -> None:
        self.client = client
        self.prefix = re.sub(r"[^A-Za-z0-9_-]", "_", collection_prefix) or "memoryd"
        self.alias = f"{self.prefix}_active"
        self.quantization = quantization
        self.exact_max_points = exact_max_points
        self.hnsw_ef = hnsw_ef
        self._dims: dict[str, int] = {}
        self._ours = re.compile(rf"^{re.escape(self.prefix)}_[0-9a-f]{{16}}$")

    @property
    def local(self) -> bool:
        """Whether the client runs qdrant-client's local mode (no server; quantization ignored)."""
        return type(getattr(self.client, "_client", None)).__name__.endswith("QdrantLocal")

    def collection(self, signature: str) -> str:
        return f"{self.prefix}_{signature_hash(check_signature(signature))}"

    # -- preparation ------------------------------------------------------------------

    async def ensure(self, signature: str, dim: int) -> None:
        """Create the signature's collection and payload indexes (idempotent).

        An existing collection with another dimension is refused (``DependencyDown``
        naming both dimensions): it is never silently reused or replaced. One of this
        dimension gets the quantization asked for, when it holds another.
        """
        name = self.collection(signature)
        check_dim(dim)
        quant = _INT8 if self.quantization else None
        existed = await self._call(self.client.collection_exists(name))
        if not existed:
            try:
                await self.client.create_collection(
                    name,
                    vectors_config=models.VectorParams(size=dim, distance=models.Distance.COSINE),
                    quantization_config=quant,
                    metadata={"signature": signature, "dim": dim},
                )
            except (*_BACKEND_ERRORS, ValueError) as exc:  # created meanwhile by another process?
                if not await self._call(self.client.collection_exists(name)):
                    raise DependencyDown(f"qdrant: cannot create collection {name}: {_reason(exc)}") from exc
        actual = await self._collection_dim(name)
        if actual != dim:
            raise DependencyDown(
                f"qdrant collection {name} has dimension {actual}, signature {signature!r} needs {dim}"
            )
        if existed:
            await self._apply_quantization(name)
        if not self.local:  # local mode has no payload indexes (and warns)
            for field, schema in qf.PAYLOAD_INDEXES.items():
                await self._call(self.client.create_payload_index(name, field, field_schema=schema, wait=True))
        self._dims[signature] = dim

    async def _apply_quantization(self, name: str) -> None:
        """Give an existing collection the quantization asked for (int8 or none), if it differs."""
        if self.local:
            return  # ignored there: nothing to apply, status says so
        info = await self._call(self.client.get_collection(name))
        if quantization_name(info.config.quantization_config) == ("int8" if self.quantization else "none"):
            return
        quant = _INT8 if self.quantization else models.Disabled.DISABLED
        await self._call(self.client.update_collection(name, quantization_config=quant))

    async def activate(self, signature: str) -> None:
        """Point the ``<prefix>_active`` alias at this signature's collection (atomic swap)."""
        name = self.collection(signature)
        if not await self._call(self.client.collection_exists(name)):
            raise DependencyDown(f"qdrant collection {name} does not exist: ensure the signature first")
        aliases = await self._call(self.client.get_aliases())
        ops: list[models.AliasOperations] = []
        if any(a.alias_name == self.alias for a in aliases.aliases):
            ops.append(models.DeleteAliasOperation(delete_alias=models.DeleteAlias(alias_name=self.alias)))
        ops.append(
            models.CreateAliasOperation(create_alias=models.CreateAlias(collection_name=name, alias_name=self.alias))
        )
        await self._call(self.client.update_collection_aliases(change_aliases_operations=ops))

    async def active_collection(self) -> str | None:
        """The collection behind the alias, if any."""
        aliases = await self._call(self.client.get_aliases())
        return next((a.collection_name for a in aliases.aliases if a.alias_name == self.alias), None)

    # -- writes -----------------------------------------------------------------------

    async def upsert(self, signature: str, items: Sequence[VectorItem]) -> int:
        """Write vectors with their payload; creates the collection when missing."""
        name = self.collection(signature)
        kept, vectors, dim = check_items(items, await self._dim(signature, required=False))
        if not kept:
            return 0
        if signature not in self._dims:
            await self.ensure(signature, dim)
        points = [
            models.PointStruct(id=str(item.memory_id).lower(), vector=vec.tolist(), payload=qf.payload(item))
            for item, vec in zip(kept, vectors, strict=True)
        ]
        for start in range(0, len(points), _WRITE_CHUNK):
            await self._call(self.client.upsert(name, points=points[start : start + _WRITE_CHUNK], wait=True))
        return len(points)

    async def delete(self, owner: str, memory_ids: Sequence[str]) -> int:
        """Remove the owner's points with these ids from every collection; return how many."""
        ids = [str(i).lower() for i in _uuids(memory_ids)]
        if not ids:
            return 0
        removed = 0
        for name in await self._collections():
            selector = qf.owner_ids(owner, ids)
            found = (await self._call(self.client.count(name, count_filter=selector, exact=True))).count
            if found:
                await self._call(self.client.delete(name, points_selector=models.FilterSelector(filter=selector)))
                removed += found
        return removed

    async def point_refs(self, page: int = _SCROLL_PAGE) -> AsyncIterator[list[tuple[str, str]]]:
        for name in await self._collections():
            offset: Any = None
            while True:
                points, offset = await self._call(
                    self.client.scroll(name, limit=page, offset=offset, with_payload=["owner"], with_vectors=False)
                )
                yield [(str(p.id), str((p.payload or {}).get("owner", ""))) for p in points]
                if offset is None:
                    break

    async def drop(self, signature: str) -> int:
        """Delete the signature's collection; return how many points it held."""
        name = self.collection(signature)
        if not await self._call(self.client.collection_exists(name)):
            return 0
        count = (await self._call(self.client.count(name, exact=True))).count
        await self._call(self.client.delete_collection(name))
        self._dims.pop(signature, None)
        return int(count)

    async def update_payload(
        self,
        owner: str,
        memory_ids: Sequence[str],
        *,
        state: str | UnsetType = UNSET,
        scope: str | UnsetType = UNSET,
        memory_type: str | UnsetType = UNSET,
        session_id: str | UnsetType | None = UNSET,
        agent_id: str | UnsetType | None = UNSET,
        expires_at: datetime | UnsetType | None = UNSET,
    ) -> int:
        """Set changed fields on the owner's points (every collection); return how many."""
        fields = {
            "state": state,
            "scope": scope,
            "memory_type": memory_type,
            "session_id": session_id,
            "agent_id": agent_id,
            "expires_at": expires_at,
        }
        changed = qf.patch(check_patch({k: v for k, v in fields.items() if v is not UNSET}))
        ids = [str(i).lower() for i in _uuids(memory_ids)]
        if not changed or not ids:
            return 0
        updated = 0
        for name in await self._collections():
            selector = qf.owner_ids(owner, ids)
            found = (await self._call(self.client.count(name, count_filter=selector, exact=True))).count
            if found:
                points = models.FilterSelector(filter=selector)
                await self._call(self.client.set_payload(name, payload=changed, points=points, wait=True))
                updated += found
        return updated

    # -- reads ------------------------------------------------------------------------

    async def search(self, signature: str, query: VectorQuery) -> list[VectorHit]:
        """Nearest visible points of the signature's collection (score = cosine similarity)."""
        name = self.collection(signature)
        vec = as_vector(query.vector, field="vector")
        limit = clamp_limit(query.limit)
        if limit == 0 or (query.types is not None and not query.types):
            return []
        dim = await self._dim(signature, required=True)
        if dim != vec.size:  # the collection cannot serve this signature's vectors: fall back
            raise DependencyDown(f"qdrant collection {name} has dimension {dim}, query has {vec.size}")
        response = await self._call(
            self.client.query_points(
                name,
                query=vec.tolist(),
                query_filter=qf.visible(query),
                search_params=self._search_params(),
                limit=limit,
                with_payload=False,
            )
        )
        return [VectorHit(memory_id=str(p.id), score=float(p.score)) for p in response.points]

    async def neighbours(
        self,
        signature: str,
        owner: str,
        *,
        min_score: float,
        per_memory: int = 5,
        limit: int = 1000,
        since: datetime | None = None,
    ) -> list[Pair]:
        """Similar pairs of the owner's active points (see the port).

        Up to ``exact_max_points`` points: loaded and compared exactly in numpy. Beyond:
        one batch of kNN queries per chunk of probes (the server's HNSW, filtered by owner).
        ``since`` compares with the time each vector was written (``embedded_at``).
        """
        name = self.collection(signature)
        if per_memory <= 0 or limit <= 0:
            return []
        await self._dim(signature, required=True)
        alive = qf.owner_alive(owner)
        total = (await self._call(self.client.count(name, count_filter=alive, exact=True))).count
        if total < 2:
            return []
        exact = total <= self.exact_max_points
        ids, vectors, written = await self._owner_points(name, alive, with_vectors=exact)
        cutoff = -np.inf if since is None else (epoch(since) or 0.0)
        probe = np.asarray(written, dtype=np.float64) >= cutoff
        if exact:
            matrix = np.asarray(vectors, dtype=np.float32)
            return await asyncio.to_thread(
                exact_pairs, ids, matrix, probe, min_score=min_score, per_memory=per_memory, limit=limit
            )
        found: dict[tuple[str, str], float] = {}
        probes = [pid for pid, p in zip(ids, probe, strict=True) if p]
        for start in range(0, len(probes), _PROBE_CHUNK):
            chunk = probes[start : start + _PROBE_CHUNK]
            requests = [  # query by id: the server looks the vector up (and skips the point itself)
                models.QueryRequest(
                    query=pid,
                    filter=models.Filter(must=[alive], must_not=[models.HasIdCondition(has_id=[pid])]),
                    params=self._search_params(),
                    limit=per_memory,
                    score_threshold=min_score,
                )
                for pid in chunk
            ]
            answers = await self._call(self.client.query_batch_points(name, requests=requests))
            pairs = ((pid, str(p.id), float(p.score)) for pid, a in zip(chunk, answers, strict=True) for p in a.points)
            for key, score in merge_pairs(pairs).items():
                found[key] = max(score, found.get(key, score))
        return best_pairs(found.items(), limit)

    async def status(self, signature: str) -> StoreStatus:
        """Healthy when reachable and the collection exists with the signature's dimension."""
        name = self.collection(signature)
        expected = self._dims.get(signature) or _dim_from_signature(signature)
        try:
            if not await self._call(self.client.collection_exists(name)):
                return self._status(signature, False, expected, 0, f"collection {name} does not exist")
            info = await self._call(self.client.get_collection(name))
            active = await self.active_collection() == name
        except DependencyDown as exc:
            return self._status(signature, False, expected, 0, exc.description)
        dim = _vector_size(info)
        count = int(info.points_count or 0)
        if expected is not None and dim != expected:
            reason = f"collection {name} has dimension {dim}, signature {signature!r} needs {expected}"
            return self._status(signature, False, dim, count, reason)
        if info.status == models.CollectionStatus.RED:
            return self._status(signature, False, dim, count, f"collection {name} status red")
        notes = [f"collection {name}", "active" if active else "not active"]
        held = quantization_name(info.config.quantization_config)
        notes.append(f"quantization: {held}")
        if self.quantization and held != "int8":
            notes.append("int8 asked: " + ("local mode ignores quantization" if self.local else "not applied yet"))
        return self._status(signature, True, dim, count, ", ".join(notes))

    # -- helpers ----------------------------------------------------------------------

    def _status(self, signature: str, healthy: bool, dim: int | None, count: int, detail: str) -> StoreStatus:
        return StoreStatus(name=self.name, healthy=healthy, signature=signature, dim=dim, vectors=count, detail=detail)

    def _search_params(self) -> models.SearchParams | None:
        if self.local or (not self.quantization and self.hnsw_ef is None):  # local mode: brute force
            return None
        quant = models.QuantizationSearchParams(rescore=True, oversampling=2.0) if self.quantization else None
        return models.SearchParams(hnsw_ef=self.hnsw_ef, quantization=quant)

    async def _owner_points(
        self, name: str, selector: models.Filter, *, with_vectors: bool
    ) -> tuple[list[str], list[list[float]], list[float]]:
        """Ids, vectors (when asked) and write times of the points matching ``selector``."""
        ids: list[str] = []
        vectors: list[list[float]] = []
        written: list[float] = []
        offset: Any = None
        while True:
            points, offset = await self._call(
                self.client.scroll(
                    name,
                    scroll_filter=selector,
                    limit=_SCROLL_PAGE,
                    offset=offset,
                    with_payload=["embedded_at"],
                    with_vectors=with_vectors,
                )
            )
            for p in points:
                ids.append(str(p.id))
                if with_vectors:
                    vectors.append(list(p.vector))  # type: ignore[arg-type]
                written.append(float((p.payload or {}).get("embedded_at") or 0.0))
            if offset is None:
                return ids, vectors, written

    async def _collections(self) -> list[str]:
        response = await self._call(self.client.get_collections())
        return [c.name for c in response.collections if self._ours.match(c.name)]

    async def _dim(self, signature: str, *, required: bool) -> int | None:
        """The signature's dimension (cached); ``DependencyDown`` if required and the collection is missing."""
        dim = self._dims.get(signature)
        if dim is not None:
            return dim
        name = self.collection(signature)
        if await self._call(self.client.collection_exists(name)):
            dim = await self._collection_dim(name)
            self._dims[signature] = dim
            return dim
        if required:
            raise DependencyDown(f"qdrant collection {name} does not exist (signature {signature!r} not ensured)")
        return None

    async def _collection_dim(self, name: str) -> int:
        return _vector_size(await self._call(self.client.get_collection(name)))

    async def _call(self, awaitable: Awaitable[T]) -> T:
        try:
            return await awaitable
        except _BACKEND_ERRORS as exc:
            raise DependencyDown(f"qdrant unavailable: {_reason(exc)}") from exc
        except ValueError as exc:  # local mode: "Collection ... not found"
            if "not found" in str(exc).lower():
                raise DependencyDown(f"qdrant: {exc}") from exc
            raise


_INT8 = models.ScalarQuantization(
    scalar=models.ScalarQuantizationConfig(type=models.ScalarType.INT8, quantile=0.99, always_ram=True)
)


def quantization_name(config: object) -> str:
    """What a collection's ``quantization_config`` holds: ``int8`` (scalar), ``binary``, ``product``
    or ``none``."""
    if isinstance(config, models.ScalarQuantization):
        return str(config.scalar.type.value)
    if isinstance(config, models.BinaryQuantization):
        return "binary"
    if isinstance(config, models.ProductQuantization):
        return "product"
    return "none"


def _vector_size(info: models.CollectionInfo) -> int:
    params = info.config.params.vectors
    if isinstance(params, models.VectorParams):
        return int(params.size)
    if isinstance(params, dict) and "" in params:
        return int(params[""].size)
    raise DependencyDown("qdrant collection has named vectors only: not a memoryd collection")


def _dim_from_signature(signature: str) -> int | None:
    """The dimension in ``{source}:{model}:{dim}[:quant]`` (the last all-digit field), if any."""
    digits = [f for f in signature.split(":") if f.isdigit()]
    return int(digits[-1]) if digits else None


def _uuids(values: Sequence[str]) -> list[str]:
    return [str(as_uuid(v)) for v in values]


def _reason(exc: BaseException) -> str:
    if isinstance(exc, UnexpectedResponse):
        return f"HTTP {exc.status_code} {exc.reason_phrase}: {exc.content[:200]!r}"
    if isinstance(exc, ResponseHandlingException):
        return f"{type(exc.source).__name__}: {exc.source}"
    return f"{type(exc).__name__}: {exc}"
