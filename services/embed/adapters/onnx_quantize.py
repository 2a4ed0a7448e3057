"""Build the optional dynamic-int8 MiniLM variant once and cache it on disk.

The recipe: let onnxruntime fold the int8-weight graph into plain
float initializers (`ORT_ENABLE_BASIC` + `optimized_model_filepath`), then
`quantize_dynamic(per_channel=True, DefaultTensorType=FLOAT)`. It needs the `onnx` package,
an optional extra; only building needs it, loading a cached file does not.

The file is named after the sha256 of the source weights and published with an atomic rename,
so concurrent builders (two worker processes starting together) each write a private temp
file and readers only ever see a complete model.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import onnxruntime as ort
import structlog

from memoryd.errors import ConfigError
from services.embed.adapters.model_file import ModelIntegrityError, sha256_file

log = structlog.get_logger(__name__)


class QuantizationUnavailable(ConfigError):
    """The dynamic-int8 variant must be built but the `onnx` package is not installed."""

    def __init__(self) -> None:
        super().__init__(
            "embed.quantization",
            "building the dynamic-int8 variant needs the onnx package: pip install 'memoryd[quant]'",
        )


def default_cache_dir() -> Path:
    """`~/.cache/memoryd/models`; settings normally pass their own directory."""
    return Path.home() / ".cache" / "memoryd" / "models"


def cache_path(source_sha256: str, cache_dir: Path) -> Path:
    return cache_dir / f"{source_sha256.lower()}-dynint8.onnx"


def ensure_dynamic_int8(source: Path, *, source_sha256: str, cache_dir: Path | None = None) -> Path:
    """Path of the cached variant of `source`, building it first if it is not there."""
    target = cache_path(source_sha256, cache_dir or default_cache_dir())
    if target.exists():
        return target
    verify_source(source, source_sha256)
    log.info("embed.quantize.build", source=str(source), target=str(target))
    publish_atomically(target, lambda tmp: quantize_dynamic_int8(source, tmp))
    return target


def verify_source(source: Path, source_sha256: str) -> None:
    """A variant is only ever built from the validated weights (``ModelIntegrityError`` otherwise)."""
    actual = sha256_file(source) if source.exists() else None
    if actual != source_sha256.lower():
        problem = (
            "model file is missing" if actual is None else f"sha256 mismatch: expected {source_sha256}, got {actual}"
        )
        raise ModelIntegrityError(source, problem)


def publish_atomically(target: Path, build: Callable[[Path], None]) -> None:
    """Run `build(tmp_file)` in a private temp dir beside `target`, then rename it into place."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".build-", dir=target.parent) as tmp:
        out = Path(tmp) / target.name
        build(out)
        with out.open("rb") as fh:
            os.fsync(fh.fileno())
        os.replace(out, target)  # atomic on POSIX; the last of racing builders wins


def quantize_dynamic_int8(source: Path, out: Path) -> None:
    """Fold `source` with onnxruntime, then quantize its weights to QInt8 per channel."""
    try:
        import onnx
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError:
        raise QuantizationUnavailable() from None
    folded = out.with_name("folded.onnx")
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    opts.optimized_model_filepath = str(folded)
    ort.InferenceSession(str(source), sess_options=opts, providers=["CPUExecutionProvider"])
    quantize_dynamic(
        folded,
        out,
        weight_type=QuantType.QInt8,
        per_channel=True,
        extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
    )
