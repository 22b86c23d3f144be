"""Relevance feedback: marks, re-ranking and refinement."""
