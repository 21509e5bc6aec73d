"""Embedding models for the recall benchmark, run in process: the deterministic fake of
`tests/fakes/embeddings/model.py`, and WordLlama (a small real model whose weights ship inside its
PyPI wheel, so nothing is downloaded at run time; a dev dependency)."""

from __future__ import annotations

import pathlib
import tempfile
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from tests.fakes.embeddings.model import embed

Embed = Callable[[Sequence[str]], npt.NDArray[np.float32]]
"""Texts -> unit vectors, one row each."""


def fake() -> Embed:
    def run(texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return np.asarray([embed(t) for t in texts], dtype=np.float32)

    return run


def wordllama() -> Embed | None:
    """WordLlama's 256-dimension model from the files in its wheel (None when it is not installed).

    The wheel keeps its tokenizer under `tokenizers/` while the loader looks in `tokenizer/` and then
    downloads, so the files are linked into a cache directory laid out as it expects."""
    try:
        import wordllama as package  # type: ignore[import-untyped,unused-ignore]
        from wordllama import WordLlama  # type: ignore[import-untyped,unused-ignore]
    except ImportError:
        return None
    root = pathlib.Path(package.__file__).parent
    cache = pathlib.Path(tempfile.mkdtemp(prefix="wordllama-"))
    for target, source in (("tokenizer", "tokenizers"), ("tokenizers", "tokenizers"), ("weights", "weights")):
        (cache / target).mkdir()
        for file in (root / source).iterdir():
            (cache / target / file.name).symlink_to(file)
    model = WordLlama.load(cache_dir=cache, disable_download=True)

    def run(texts: Sequence[str]) -> npt.NDArray[np.float32]:
        vectors = np.asarray(model.embed(list(texts), norm=True), dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return (vectors / np.where(norms == 0, 1.0, norms)).astype(np.float32)

    return run
