"""Promotion: web results written into the brain, with tags, notes and tokens."""
