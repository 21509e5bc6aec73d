"""The pluggable context engine: when to compact, how, and what it reports.

The built-in engine is `compressor` (`agent.compaction.compressor.ContextCompactor`);
`agent.compaction.registry` finds an engine by name.

An engine instance serves one session. Its durable state (`EngineState`) is loaded from and saved to
the session row by the caller, so engines hold no I/O of their own: the summarizer and token counter
are injected.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from agent.types import Message, Role
from agent.usage import Usage

logger = logging.getLogger(__name__)

TokenCounter = Callable[[Message], int]


class Outcome(StrEnum):
    OK = "ok"
    DEGRADED = "degraded"
    ABORTED = "aborted"


MIN_TARGET_RATIO = 0.10
"""The least share of the threshold the kept tail's budget is given, whatever `target_ratio` says."""


@dataclass(frozen=True, slots=True)
class CompactionConfig:
    """The operator's `compression` settings (they keep that name), already validated by
    the gateway's settings."""

    enabled: bool = True
    threshold: float = 0.50
    target_ratio: float = 0.20
    protect_last_n: int = 20

    @property
    def clamped_target_ratio(self) -> float:
        return min(0.80, max(MIN_TARGET_RATIO, self.target_ratio))


CompressionConfig = CompactionConfig
"""The earlier name, kept for engine plugins written against it."""


@dataclass(slots=True)
class EngineState:
    """What an engine remembers about one session between turns (persisted as JSON on the session)."""

    previous_summary: str | None = None
    compression_count: int = 0
    """Compactions so far (as `sessions.compaction_count`); the name is the persisted JSON key."""
    last_prompt_tokens: int | None = None
    ineffective_auto_compactions: int = 0
    paused_at_tokens: int | None = None
    """Set when automatic compaction paused after ineffective runs: the context size at that moment.
    Automatic runs resume by themselves once the context has grown enough for a compaction to help."""
    pause_reason: str | None = None
    awaiting_effect: bool = False
    """True right after an automatic compaction until the next API-reported prompt size arrives."""
    adopted_compaction: str | None = None
    """The fingerprint of the newest server-side compaction block already taken into the window."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> EngineState:
        if not data:
            return cls()
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)


@dataclass(frozen=True, slots=True)
class SummaryRequest:
    """Everything a summarizer may need: standalone ones use `middle`, prefix-reusing ones `history`."""

    middle: Sequence[Message]
    previous_summary: str | None
    focus: str | None
    max_tokens: int
    instructions: str
    """The full summarization prompt text (template, previous summary, focus) built by the compressor."""
    history: Sequence[Message] = ()
    middle_start: int = 0
    middle_end: int = 0


@dataclass(frozen=True, slots=True)
class SummaryResponse:
    text: str
    model: str
    usage: Usage = field(default_factory=Usage)
    latency_s: float = 0.0


class Summarizer(Protocol):
    """One auxiliary-LLM call. Raises `agent.errors.SummarizerError` (abort=True for auth/quota/network)."""

    def __call__(self, request: SummaryRequest) -> Awaitable[SummaryResponse]: ...


@dataclass(frozen=True, slots=True)
class Kept:
    """What a compaction keeps word for word (head and tail) and what sized the tail, in the engine's
    token count: the tail is the newest messages within `tail_budget` tokens, at least `protect_last_n`
    messages while they fit in `tail_cap`; `threshold_tokens` and `target_ratio` make the budget."""

    messages: int
    """Messages in the window the engine was given."""
    head_messages: int
    head_tokens: int
    tail_messages: int
    tail_tokens: int
    tail_budget: int
    tail_cap: int
    threshold_tokens: int
    target_ratio: float
    protect_last_n: int

    @property
    def middle_messages(self) -> int:
        """Messages between the head and the tail: what a summary would replace."""
        return max(0, self.messages - self.head_messages - self.tail_messages)


@dataclass(frozen=True, slots=True)
class CompactionResult:
    """What `compress` did. The caller archives `removed_indices` and persists the new window atomically."""

    messages: list[Message]
    """The new active window: head, the summary message (if any), tail."""
    origin: tuple[int | None, ...]
    """For each message in `messages`, its index in the input, or None for the new summary message."""
    removed_indices: tuple[int, ...]
    """Input indices that are no longer in the window (to archive; nothing is deleted)."""
    pruned_indices: tuple[int, ...]
    """Input indices kept in the window whose old tool output was replaced by the cleared marker."""
    outcome: Outcome
    reason: str
    tokens_before: int
    tokens_after: int
    summary: str | None = None
    summary_role: Role | None = None
    summarizer_model: str | None = None
    summary_usage: Usage | None = None
    stubbed_tool_ids: tuple[str, ...] = ()
    """tool_use ids whose results were lost and got a stub result."""
    idle: bool = False
    """Nothing to do (outcome `aborted`): nothing between the kept head and tail, or a result that would
    not be smaller. Not a failure: a manual `/compact` says so in plain words and is not counted."""
    kept: Kept | None = None
    """What the engine kept word for word and why (None: the engine does not say)."""

    @property
    def changed(self) -> bool:
        return self.outcome is not Outcome.ABORTED and bool(self.removed_indices or self.pruned_indices)


CompressionResult = CompactionResult
"""The earlier name, kept for engine plugins written against it."""


class ContextEngine(ABC):
    """Decides when the session's context must shrink and shrinks it."""

    name: str = "abstract"

    def __init__(
        self,
        *,
        context_length: int,
        config: CompactionConfig,
        summarizer: Summarizer,
        count_tokens: TokenCounter,
        state: EngineState | None = None,
    ) -> None:
        self.context_length = context_length
        self.config = config
        self.summarizer = summarizer
        self.count_tokens = count_tokens
        self.state = state if state is not None else EngineState()

    @property
    def threshold_tokens(self) -> int:
        return int(self.context_length * self.config.threshold)

    @abstractmethod
    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        """True when an automatic compaction should run now (uses the last reported size when None)."""

    @abstractmethod
    async def compress(
        self,
        messages: Sequence[Message],
        *,
        focus: str | None = None,
        force: bool = False,
        keep_from: int | None = None,
    ) -> CompactionResult:
        """Shrink `messages` (the session's active window, system prompt excluded). `keep_from`: the
        first message still awaiting a reply; it and every later message must stay in the window (they
        may be shown shortened, never summarized before they are answered)."""

    def update_from_usage(self, usage: Usage) -> None:
        """Record the API-reported prompt size (input + cache read + cache write) of the latest call."""
        self.state.last_prompt_tokens = usage.prompt_tokens

    def expect_prompt(self, prompt_tokens: int) -> None:
        """The caller's measure of the next request (the last reported size plus what was added since,
        or the request it is about to send): an automatic run judges the threshold and the pause on it,
        since the messages alone leave out the system prompt, tools and what is still to come."""
        self.state.last_prompt_tokens = max(self.state.last_prompt_tokens or 0, prompt_tokens)

    def request_options(self) -> tuple[dict[str, Any], tuple[str, ...]] | None:
        """The API's `context_management` and the beta headers it needs, when this engine lets the API
        manage the context inside reply calls (None: the engine does it all itself)."""
        return None

    def tool_schemas(self) -> list[dict[str, Any]]:
        """Extra tools this engine exposes to the model (none by default)."""
        return []

    async def handle_tool(self, name: str, tool_input: dict[str, Any]) -> str:
        raise KeyError(f"engine {self.name!r} has no tool {name!r}")
