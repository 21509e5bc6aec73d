"""Compactions: applying, recording and undoing them, one transaction each."""
