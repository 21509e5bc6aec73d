"""How much the fake's models with adaptive thinking think, by `output_config.effort`.

What Anthropic documents (the effort page, `build-with-claude/effort`, and the models' overview and
what's-new pages, Nov 2026): effort controls how many tokens a response spends, thinking included; a
lower level is "more conservative with token usage, optimizing for speed and cost while accepting some
reduction in capability"; high is what an unset effort means on most models, Claude Opus 5.5 and Claude
Haiku 5.5 default to medium (`ModelSpec.default_effort`); effort is a behavioural signal, not a strict
budget. The pages give no figures: no tokens per level and no ratio between levels.

So the figures here are ASSUMPTIONS, chosen conservatively and kept in one place:

- `EFFORT_SCALE`: each level thinks twice what the level below it thinks (low 1/4, medium 1/2, high 1,
  xhigh 2, max 4 of high). The one public measurement found (third-party, one coding task) had Sonnet
  5.5's output at medium about half its output at high, and Opus 5.5's ladder rising faster above high
  (about 2.6x at xhigh, 13x at max): the doubling matches it below high and understates the top levels.
- Only the up-front thinking scales. The visible answer is the same text at every level, although the
  docs say effort shapes all tokens (text and tool calls too): what a lower level saves is understated,
  and no level writes a worse answer (the fake cannot show what a lower effort costs in quality).
- `ThinkingVolume.high_tokens`: what one sampled request thinks at high. The default (16) keeps test
  bodies small; benchmarks that weigh the levels set a chat-sized figure of their own and say so.

Every sampled request of an adaptive-thinking model thinks this much (each tool round too); a script's
`thinking_tokens` or `thinking` text, when given, wins. Thinking is billed as output tokens and, with
pacing, streamed at the token rate before the answer's first text (`wire.Pacing`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

EFFORT_SCALE: Mapping[str, float] = MappingProxyType(
    {"low": 0.25, "medium": 0.5, "high": 1.0, "xhigh": 2.0, "max": 4.0}
)
"""Thinking at each level as a share of thinking at high (an assumption: see the module docstring)."""

DEFAULT_HIGH_TOKENS = 16


@dataclass(frozen=True, slots=True)
class ThinkingVolume:
    """Tokens of up-front thinking per sampled request: `high_tokens` scaled by the level's share."""

    high_tokens: int = DEFAULT_HIGH_TOKENS
    scale: Mapping[str, float] = field(default_factory=lambda: EFFORT_SCALE)

    def __post_init__(self) -> None:
        if self.high_tokens < 1:
            raise ValueError("high_tokens must be positive")
        missing = sorted(set(EFFORT_SCALE) - set(self.scale))
        if missing:
            raise ValueError(f"scale lacks effort levels: {', '.join(missing)}")

    def tokens(self, effort: str) -> int:
        """At least one token: an adaptive answer always carries a (signed) thinking block."""
        return max(1, round(self.high_tokens * self.scale[effort]))
