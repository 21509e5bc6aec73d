"""Benchmarks: plain scripts that report CPU time (run with `python -m bench.<name>`)."""
