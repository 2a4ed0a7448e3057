"""The embed service's settings: one frozen Struct read from `MEMORYD_EMBED_*` in `setup`.

The source, quantization and remote fields are the defaults of the engine settings: the global
settings row may override them at run time (`shared.settings.engine`, applied by
`engine_switch.py` without a restart). Embed jobs: a worker pulls up to `job_batch_max` jobs and
embeds them in inference calls of at most `batch_max` texts, `pipeline` batches in flight (the next
is read while one is in inference), a short batch leaving after `batch_wait_ms`; a call also stays within
`batch_max_tokens` padded tokens (texts are cut by length into calls, `logic.plan_batches`), since
a call costs in proportion to its padded tokens and ONNX Runtime's arena keeps the peak of the
largest call. Query embeddings are batched apart: one that finds an `inference_slots` slot free
leaves at once, those arriving while every slot is busy leave together (`query_batch_max`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import msgspec

from shared.settings.engine import EmbeddingConfig


class EmbedSettings(EmbeddingConfig, frozen=True, kw_only=True):
    """`EmbeddingConfig` (source, quantization, remote URL/model/dim/key: also runtime engine
    settings, see `shared.settings.engine`) plus this service's tuning."""

    #: where the model's variants are built once (the default model with its word-embedding table kept
    #: int8 and its graph optimized ahead of time, one file per ONNX Runtime version, needs the `quant`
    #: extra; the dynamic-int8 variant); default `<MEMORYD_DATA_DIR>/models`, else `~/.cache/memoryd/models`
    model_cache_dir: str | None = None
    #: ONNX intra-op threads per process (scale with processes instead)
    threads: Annotated[int, msgspec.Meta(ge=1, le=64)] = 1
    #: inference calls one process runs at once, one thread each: embed jobs use one, query
    #: embeddings any (concurrent queries then use a second core)
    inference_slots: Annotated[int, msgspec.Meta(ge=1, le=16)] = 2
    #: of those, how many embed-job calls may run at once (capped at `inference_slots`): 2 lets a
    #: backlog of jobs use both cores of a small machine; queries still go first among waiting calls
    #: but may wait for a job call already running (a call holds at most `batch_max` texts)
    job_slots: Annotated[int, msgspec.Meta(ge=1, le=16)] = 1

    #: texts per inference call (16: the best texts/s of 8, 16 and 32 in the embed benchmark)
    batch_max: Annotated[int, msgspec.Meta(ge=1, le=1024)] = 16
    #: embed jobs pulled, read, written and acked together; their texts are sorted by length and cut
    #: into inference calls of at most `batch_max` (a wider batch groups similar lengths better and
    #: needs fewer statements per memory)
    job_batch_max: Annotated[int, msgspec.Meta(ge=1, le=1024)] = 64
    #: padded tokens (texts x longest) per inference call, which bounds its activation memory
    batch_max_tokens: Annotated[int, msgspec.Meta(ge=1)] = 512
    #: a batch that is not full leaves after this long
    batch_wait_ms: Annotated[float, msgspec.Meta(ge=0, le=10_000)] = 10.0
    #: batches in flight at once (the next is read while one is in inference)
    pipeline: Annotated[int, msgspec.Meta(ge=1, le=8)] = 2
    #: query embeddings that leave together while inference is busy
    query_batch_max: Annotated[int, msgspec.Meta(ge=1, le=1024)] = 64
    #: how long a query waits for others to batch with (0: an idle service answers at once)
    query_wait_ms: Annotated[float, msgspec.Meta(ge=0, le=10_000)] = 0.0
    #: query vectors kept per process (LRU; 0 = no cache)
    cache_size: Annotated[int, msgspec.Meta(ge=0)] = 10_000
    #: seconds a cached query vector stays valid
    cache_ttl_s: Annotated[float, msgspec.Meta(gt=0)] = 3600.0

    #: seconds per request to the remote embedding endpoint
    remote_timeout_s: Annotated[float, msgspec.Meta(gt=0)] = 30.0
    #: pass `dimensions` to the remote endpoint (OpenAI text-embedding-3 can shorten vectors)
    remote_send_dimensions: bool = False
    #: requests in flight to the remote embedding endpoint
    remote_concurrency: Annotated[int, msgspec.Meta(ge=1, le=64)] = 4

    #: how often a pending signature change is checked
    meta_poll_s: Annotated[float, msgspec.Meta(gt=0)] = 2.0
    #: old vectors are dropped this long after a signature switch
    retire_grace_s: Annotated[float, msgspec.Meta(ge=0)] = 60.0
    #: period of the lost-job sweep (0 = off)
    sweep_interval_s: Annotated[float, msgspec.Meta(ge=0)] = 300.0
    #: a memory without a vector this long is taken to have lost its embed job
    sweep_min_age_s: Annotated[float, msgspec.Meta(ge=0)] = 600.0

    def cache_dir(self, data_dir: str | None) -> Path:
        """`model_cache_dir`, else `<data_dir>/models` (`MEMORYD_DATA_DIR`), else `~/.cache/memoryd/models`."""
        if self.model_cache_dir:
            return Path(self.model_cache_dir)
        if data_dir:
            return Path(data_dir) / "models"
        return Path.home() / ".cache" / "memoryd" / "models"
