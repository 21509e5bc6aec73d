"""Agent core: context engine, compressor, prompt-cache policy and the tool loop (no I/O of its own)."""
