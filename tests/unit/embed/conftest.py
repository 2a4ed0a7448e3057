"""Fixtures for the embedder tests: the reference vectors and one embedder per variant.

Both embedders are session-scoped: the int8-weight model loads in ~0.3 s, the dynamic-int8
variant is built once (~3 s) into a pytest temp dir, never into the user's cache.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from services.embed.adapters import LocalEmbedder

REFERENCE = Path(__file__).resolve().parents[2] / "data" / "minilm_reference.json"
LONG_TEXT = "The quarterly report covers revenue and churn. " * 400  # ~3600 tokens


def cosines(a: npt.NDArray[np.float32], b: npt.NDArray[np.float32]) -> npt.NDArray[np.float64]:
    """Row-wise cosine (the reference vectors are rounded, so normalise again)."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    return (a64 * b64).sum(1) / (np.linalg.norm(a64, axis=1) * np.linalg.norm(b64, axis=1))


@dataclass(frozen=True)
class Reference:
    sentences: list[str]
    vectors: npt.NDArray[np.float32]


@pytest.fixture(scope="session")
def reference() -> Reference:
    doc = json.loads(REFERENCE.read_text(encoding="utf-8"))
    return Reference(doc["sentences"], np.asarray(doc["vectors"], dtype=np.float32))


@pytest.fixture(scope="session")
def embedder() -> LocalEmbedder:
    return LocalEmbedder.default()


@pytest.fixture(scope="session")
def int8_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="session")
def int8_embedder(int8_cache: Path) -> LocalEmbedder:
    return LocalEmbedder.dynamic_int8(cache_dir=int8_cache)
