"""Chat gateway: platform adapters, storage and the per-chat pipeline."""
