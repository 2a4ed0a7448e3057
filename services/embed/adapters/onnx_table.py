"""The default model with its word-embedding table kept int8: gathered first, then dequantized.

The model stores each row of the word-embedding table as int8 with a per-row scale and
dequantizes the whole table before its ``Gather``, which ONNX Runtime's constant folding turns
into a float32 copy. The rewritten graph gathers the int8 rows and scales first and dequantizes
only the rows looked up: bit-identical vectors (the signature stays), the table kept int8. The
cached file is also what ONNX Runtime's optimizer makes of it (``ORT_ENABLE_EXTENDED``), so a
worker has nothing left to fold; its name carries the ONNX Runtime version. Building needs
``onnx`` (extra ``quant``) and runs in a child process (``python -m
services.embed.adapters.onnx_table SOURCE OUT``), so a worker never loads onnx; the file is cached
beside the dynamic-int8 variant and published atomically. Without onnx, or for a graph without
the pattern, the worker loads the original file.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import onnxruntime as ort
import structlog

from services.embed.adapters.onnx_quantize import publish_atomically, verify_source

log = structlog.get_logger(__name__)

TABLE = "inner.embeddings.word_embeddings.weight"
#: exit code of the builder when it cannot build (no onnx, or no such pattern in the graph)
CANNOT_BUILD = 3


def _stem(source_sha256: str) -> str:
    """What every build of the rewritten model from these weights is named after."""
    return f"{source_sha256.lower()}-int8-table"


def cache_path(source_sha256: str, cache_dir: Path) -> Path:
    return cache_dir / f"{_stem(source_sha256)}-ort{ort.__version__}.onnx"


def rewrite(model: Any, table: str = TABLE) -> bool:
    """Rewrite ``model`` (an ``onnx.ModelProto``) in place: ``Gather(Mul(Cast(table_q), scale), ids)``
    becomes ``Mul(Cast(Gather(table_q, ids)), Gather(scale, ids))``. False (model untouched) when
    the graph does not dequantize ``table`` exactly that way."""
    from onnx import TensorProto, helper

    nodes = list(model.graph.node)
    by_output = {out: n for n in nodes for out in n.output}
    cast, mul = by_output.get(f"{table}_f"), by_output.get(table)
    gathers = [n for n in nodes if n.op_type == "Gather" and n.input[0] == table]
    users = [n for n in nodes if table in n.input]
    if (
        cast is None
        or mul is None
        or cast.op_type != "Cast"
        or list(cast.input) != [f"{table}_q"]
        or mul.op_type != "Mul"
        or list(mul.input) != [f"{table}_f", f"{table}_scale"]
        or len(gathers) != 1
        or users != gathers
    ):
        return False
    gather = gathers[0]
    if any(a.name == "axis" and a.i != 0 for a in gather.attribute):
        return False
    ids = gather.input[1]
    replacement = [
        helper.make_node("Gather", [f"{table}_q", ids], [f"{table}_rows_q"], name=f"{table}_gather_q"),
        helper.make_node("Gather", [f"{table}_scale", ids], [f"{table}_rows_scale"], name=f"{table}_gather_scale"),
        helper.make_node("Cast", [f"{table}_rows_q"], [f"{table}_rows_f"], name=f"{table}_cast", to=TensorProto.FLOAT),
        helper.make_node("Mul", [f"{table}_rows_f", f"{table}_rows_scale"], list(gather.output), name=f"{table}_mul"),
    ]
    kept: list[Any] = []
    for node in nodes:
        if node is gather:
            kept += replacement
        elif node is not cast and node is not mul:
            kept.append(node)
    del model.graph.node[:]
    model.graph.node.extend(kept)
    return True


def build(source: Path, out: Path) -> bool:
    """Write ``source`` rewritten, then optimized, to ``out``; False when onnx is missing or the
    graph differs."""
    try:
        import onnx
    except ImportError:
        return False
    model = onnx.load(str(source))
    if not rewrite(model):
        return False
    onnx.checker.check_model(model)
    rewritten = out.with_name(f"rewritten-{out.name}")
    onnx.save(model, str(rewritten))
    del model
    optimize(rewritten, out)
    rewritten.unlink()
    return True


def optimize(source: Path, out: Path) -> None:
    """Save the graph ONNX Runtime's portable optimizations make of ``source`` to ``out``
    (``ORT_ENABLE_EXTENDED``: no hardware-specific layout, so the file suits any CPU)."""
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    opts.optimized_model_filepath = str(out)
    ort.InferenceSession(str(source), sess_options=opts, providers=["CPUExecutionProvider"])


def ensure_int8_table(source: Path, *, source_sha256: str, cache_dir: Path) -> Path | None:
    """Path of the cached rewritten model, building it first (in a child process) if needed;
    None when it cannot be built here (the caller loads ``source`` itself)."""
    target = cache_path(source_sha256, cache_dir)
    if target.exists():
        return target
    verify_source(source, source_sha256)

    def child(tmp: Path) -> None:
        done = subprocess.run(
            [sys.executable, "-m", __name__, str(source), str(tmp)], capture_output=True, text=True, check=False
        )
        if done.returncode == CANNOT_BUILD:
            raise _CannotBuild()
        if done.returncode != 0:
            raise RuntimeError(f"building {target.name} failed: {done.stderr.strip()[-2000:]}")

    try:
        publish_atomically(target, child)
    except _CannotBuild:
        log.warning("embed.int8_table.unavailable", source=str(source), hint="pip install 'memoryd[quant]'")
        return None
    log.info("embed.int8_table.built", target=str(target))
    for stale in superseded(target, source_sha256):
        stale.unlink(missing_ok=True)
        log.info("embed.int8_table.removed", path=str(stale), reason="superseded")
    return target


def superseded(target: Path, source_sha256: str) -> list[Path]:
    """Earlier builds of ``target``'s model beside it (another ONNX Runtime version, or from
    before the graph was optimized ahead of time); a process that loaded one keeps its copy."""
    return [p for p in target.parent.glob(f"{_stem(source_sha256)}*.onnx") if p != target]


class _CannotBuild(Exception):
    pass


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m services.embed.adapters.onnx_table SOURCE OUT", file=sys.stderr)
        return 2
    return 0 if build(Path(argv[0]), Path(argv[1])) else CANNOT_BUILD


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
