"""``wordllama``: an offline embedding model for ``llm``, registered by this package.

WordLlama (``pip install 'datasette-dbrain-websearch[semantic]'``) ships its default model's
weights (``l2_supercat``, 256 dimensions, 16 MB) and tokenizer inside its wheel. Its own lookup
of the bundled files can fall back to a download, so the model is loaded with ``cache_dir`` at
the package's folder (where ``weights/`` and ``tokenizers/`` are) and downloads disabled: a
missing file is an error, never a network call. Embedding a question takes well under a
millisecond on one core.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import llm

MODEL_ID = "wordllama"


@llm.hookimpl
def register_embedding_models(register: Any) -> None:
    try:
        import wordllama  # noqa: F401
    except ImportError:
        return
    register(WordLlamaEmbedding())


class WordLlamaEmbedding(llm.EmbeddingModel):
    """WordLlama's ``l2_supercat`` (256 dimensions), loaded once per process."""

    model_id = MODEL_ID
    batch_size = 256
    _lock = threading.Lock()
    _model: Any = None

    def _load(self) -> Any:
        with self._lock:
            if WordLlamaEmbedding._model is None:
                import wordllama
                from wordllama import WordLlama

                package = Path(wordllama.__file__).parent
                WordLlamaEmbedding._model = WordLlama.load(
                    config="l2_supercat", dim=256, cache_dir=package, disable_download=True
                )
        return WordLlamaEmbedding._model

    def embed_batch(
        self, items: Iterable[str | bytes], *, key: str | None = None
    ) -> Iterator[list[float]]:
        texts = [i.decode("utf-8", "replace") if isinstance(i, bytes) else i for i in items]
        if not texts:
            return iter(())
        import numpy as np

        vectors = self._load().embed(texts, norm=False)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        # An empty text has no tokens: its vector is zeros, not NaN.
        return (v.tolist() for v in vectors / np.where(norms == 0, 1, norms))
