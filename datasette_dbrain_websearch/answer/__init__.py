"""Grounded answers over a research run's evidence.

``stage`` runs the answer stage; ``extractive`` and ``model`` are the two synthesizers;
``verify`` checks every citation against the run's keys, whatever wrote it; ``gaps`` says what
the answer cannot say and what the web added.
"""

from .extractive import Passage
from .stage import AnswerAccess, answer_stage

__all__ = ["AnswerAccess", "Passage", "answer_stage"]
