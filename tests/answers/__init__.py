"""Grounded answers: the synthesizers, the verifier, citations and conflicts, and the answer on
every surface."""
