"""`python -m bench.ceiling`: raw inference throughput, the ceiling the service is held to.

Reads texts (one JSON list) and embeds them in order, `--batch` at a time, with the same
`LocalEmbedder` a worker uses (tokenization, ONNX Runtime, pooling; nothing else: no NATS,
no Postgres), after a short warm-up. Prints one JSON object. Run in its own process, as a
worker is, so the benchmark (`python -m bench embed`) measures both on equal terms.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from services.embed.adapters import LocalEmbedder


def measure(embedder: LocalEmbedder, texts: list[str], batch: int, warmup_batches: int = 3) -> dict[str, float]:
    """Wall-clock throughput, and CPU seconds (this process, all threads) per text."""
    for i in range(warmup_batches):
        embedder.embed(texts[i * batch : (i + 1) * batch] or texts[:batch])
    started, cpu = time.perf_counter(), time.process_time()
    for i in range(0, len(texts), batch):
        embedder.embed(texts[i : i + batch])
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu
    return {
        "texts": len(texts),
        "batch": batch,
        "seconds": seconds,
        "texts_per_s": len(texts) / seconds,
        "cpu_ms_per_text": cpu_seconds * 1000 / len(texts),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ceiling")
    parser.add_argument("--texts", type=Path, required=True, help="a JSON list of strings")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--quantization", choices=("none", "dynamic-int8"), default="none")
    parser.add_argument("--cache-dir", type=Path, default=None, help="where the dynamic-int8 model is cached")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    texts = json.loads(args.texts.read_text(encoding="utf-8"))
    if args.quantization == "dynamic-int8":
        embedder = LocalEmbedder.dynamic_int8(cache_dir=args.cache_dir, threads=args.threads)
    else:
        embedder = LocalEmbedder.default(threads=args.threads)
    json.dump({**measure(embedder, texts, args.batch), "signature": embedder.signature}, sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
