"""Pinned facts of a chat, bounded."""
