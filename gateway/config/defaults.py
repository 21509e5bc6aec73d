"""Default values that other parts name, and the older environment names still read."""

from __future__ import annotations

from typing import Literal

DEFAULT_MODEL = "claude-sonnet-5-5"
DEFAULT_SUMMARY_MODEL = "claude-haiku-5-5"
"""Its window (1M) covers any middle the default planned window can hand it; see
`gateway.app.wiring.summary_model_check`."""
DEFAULT_PLANNED_WINDOW = 500_000
"""What compaction plans for on a model whose window is larger (the 5.x models take 1M): chosen by the
cost benchmark (`python -m bench.bench_cost --planned`, BENCHMARKS.md section 12)."""
DEFAULT_DATABASE_URL = "sqlite+aiosqlite:///./gateway.db"
DEFAULT_EFFORT: Literal["medium"] = "medium"
"""`output_config.effort` on the models that take it: a chat people wait on. Against the API's default
on Sonnet 5.5 (high), the effort benchmark (`python -m bench.bench_effort`, BENCHMARKS.md section 15)
measured a third less per chat-day and the first words seconds sooner; Anthropic calls medium the
balanced level and makes it the default of Opus 5.5 and Haiku 5.5. What a lower effort costs in answer
quality no fake can measure."""


OLDER_NAMES = {"MODEL_CONTEXT_LENGTH": "CONTEXT__PLANNED_WINDOW"}
"""Older environment names that still work, and the name to use now (besides `SECTION_KEY` spellings)."""
