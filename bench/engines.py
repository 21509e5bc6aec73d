"""The server-side compaction engine at benchmark scale.

The API will not compact below 50,000 input tokens, and the cost and fidelity benchmarks run at small
windows (12,000-16,000 tokens) so that days of chat compact often in seconds of replay. To compare the two
engines on the same traces, this module registers `server-scaled`: the `server` engine with the floor
lowered, and the fake API is told the same floor (`FakeAnthropic.compaction_min_trigger`) and writes
summaries within the built-in compressor's budget at that window. Everything
else (the request's edit, the API's summary, taking it into the window) is the production path.
"""

from __future__ import annotations

from collections.abc import Callable

from agent.compaction.prompt import summary_budget
from agent.compaction.registry import register_context_engine
from agent.compaction.server import MIN_TRIGGER_TOKENS, ServerCompaction
from tests.fakes.anthropic import FakeAnthropic

SCALED = "server-scaled"
SCALED_FLOOR = 2_048


class ScaledServerCompaction(ServerCompaction):
    name = SCALED
    min_trigger_tokens = SCALED_FLOOR


def use_scaled_server(fake: FakeAnthropic, window: int) -> None:
    """Register the scaled engine and let the fake accept its trigger. The API's summary gets the
    budget the built-in compressor's summary has at this window, so the two keep comparable amounts."""
    register_context_engine(SCALED, ScaledServerCompaction)
    fake.compaction_min_trigger = SCALED_FLOOR
    fake.compaction_summary_tokens = summary_budget(10**9, window)


Prepare = Callable[[FakeAnthropic], None]


def server_engine(window: int | None, threshold: float = 0.5) -> tuple[str, Prepare | None]:
    """The engine name and fake set-up for the server-side engine at `window` (None: the model's own):
    the production `server` engine where the compressor's threshold reaches the API's floor, the
    scaled one below it."""
    if window is None or window * threshold >= MIN_TRIGGER_TOKENS:
        return "server", None
    return SCALED, lambda fake: use_scaled_server(fake, window)
