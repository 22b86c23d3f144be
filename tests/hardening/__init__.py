"""Hostile requests and environments, limits, privacy, secrets and cross-site spending."""
