"""Recall over a chat's whole history: keyword ranking on both databases, excerpts, originals, vectors."""
