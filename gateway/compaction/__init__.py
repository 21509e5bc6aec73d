"""Compacting a stored session: the one compactor and when it fires."""
