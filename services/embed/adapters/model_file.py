"""The model file on disk: its sha256, and reading it only when it is the file we expect.

Shared by the ONNX adapter (which loads the weights) and the quantizer (which builds the
dynamic-int8 variant from them), so neither imports the other.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from memoryd.errors import ConfigError


class ModelIntegrityError(ConfigError):
    """The model file is missing or is not the file whose sha256 we expect."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__("embed.model", f"{path}: {problem}")
        self.path = path


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def read_verified(path: Path, expected_sha256: str | None) -> bytes:
    """The file's bytes, after checking their sha256 (None skips the check).

    Hashing the very bytes the session is built from leaves no window between check and load.
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ModelIntegrityError(path, "model file is missing") from None
    if expected_sha256 is not None:
        actual = hashlib.sha256(data).hexdigest()
        if actual != expected_sha256.lower():
            raise ModelIntegrityError(path, f"sha256 mismatch: expected {expected_sha256}, got {actual}")
    return data
