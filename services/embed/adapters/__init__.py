"""What the embed service alone talks to: the local ONNX model (`onnx_local`)."""

from services.embed.adapters.onnx import DIM, DYNAMIC_INT8, MODEL_NAME, LocalEmbedder, ModelIntegrityError

__all__ = ["DIM", "DYNAMIC_INT8", "MODEL_NAME", "LocalEmbedder", "ModelIntegrityError"]
