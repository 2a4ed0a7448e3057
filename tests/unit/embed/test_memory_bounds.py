"""The embed worker's memory bounds: the session options it runs with, the padded-token cap
per inference call, one tokenizer, and the heap given back after the model is built."""

from __future__ import annotations

import onnxruntime as ort

from services.embed.adapters import LocalEmbedder
from services.embed.adapters.onnx import release_freed_heap, session_options
from services.embed.logic import plan_batches
from services.embed.settings import EmbedSettings


def _bounded(opts: ort.SessionOptions) -> None:
    assert opts.enable_mem_pattern is False  # no pre-planned block per input shape
    assert opts.enable_cpu_mem_arena is True  # without the arena glibc fragments (measured worse)
    assert opts.inter_op_num_threads == 1


def test_session_options_are_the_bounded_ones() -> None:
    _bounded(session_options(1))
    _bounded(session_options(2))


def test_the_worker_session_runs_with_them(embedder: LocalEmbedder, int8_embedder: LocalEmbedder) -> None:
    _bounded(embedder.options)
    _bounded(int8_embedder.options)
    assert embedder.options.intra_op_num_threads == 1


def test_padded_tokens_per_call_are_capped_at_512_by_default() -> None:
    cap = EmbedSettings().batch_max_tokens
    assert cap == 512
    # 16 texts truncated at 256 tokens go 2 to a call, never 16 x 256 at once.
    assert all(len(r) * 256 <= cap for r in plan_batches([256] * 16, EmbedSettings().batch_max, cap))
    # typical memories (~30 tokens) still fill a whole batch
    assert [len(r) for r in plan_batches([30] * 16, EmbedSettings().batch_max, cap)] == [16]


def test_token_counts_ignore_the_padding(embedder: LocalEmbedder) -> None:
    texts = ["hi", "I usually run five kilometres every morning before work."]
    alone = [embedder.token_counts([t])[0] for t in texts]
    assert embedder.token_counts(texts) == alone
    assert alone[0] == 3  # [CLS] hi [SEP]


def test_freed_heap_is_given_back_on_glibc() -> None:
    assert release_freed_heap() is True
