"""What one session's agent is made of, built in one place: the context engine with its summarizer,
the tools, the system prompt, and the token calibration they all count with.

The turn runner, the keep-alive job, `/compact`, `/stats` and the scheduled jobs ask the kit; none of
them builds an engine, a summarizer or a system prompt of its own. `system` is the one function that
assembles a system prompt (base prompt, the chat's pins, the note once the session was compacted).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from agent.caching.plan import CacheState, TurnCachePlan
from agent.compaction.engine import CompactionConfig, ContextEngine, EngineState, Summarizer
from agent.compaction.registry import EngineFactory
from agent.compaction.summarizer import CostAwareSummarizer, PrefixContext
from agent.llm import LLMClient
from agent.loop import Conversation, Entry, LoopConfig, RefLabel
from agent.models import CacheTTL, ModelInfo
from agent.pins import system_prompt
from agent.streaming import StreamSink
from agent.tokens import CalibratedCounter, estimate_tools
from agent.tools.registry import ToolRegistry
from agent.types import Message
from gateway.store import SessionRecord, TurnSnapshot

R = TypeVar("R")

ToolsFactory = Callable[[int], ToolRegistry]
"""chat_pk -> the tools for that chat (recall is bound to one chat)."""


@dataclass(frozen=True, slots=True)
class KitSettings:
    """The settings a session's agent is built from (taken from `Settings` once, at start-up)."""

    model: ModelInfo
    summary_model: ModelInfo
    base_prompt: str
    compression: CompactionConfig
    loop: LoopConfig
    cache_ttl: CacheTTL | None
    """The TTL a prefix summary call marks its cache reads with; None when caching is off."""


class SessionKit:
    """Builds a session's engine, summarizer, tools and system prompt from settings and the stored
    session."""

    def __init__(
        self,
        settings: KitSettings,
        *,
        engines: EngineFactory,
        llm: LLMClient,
        summary_llm: LLMClient | None,
        tools: ToolsFactory,
        clock: Callable[[], datetime],
    ) -> None:
        self.settings = settings
        self.engines = engines
        self.llm = llm
        self.summary_llm = summary_llm or llm
        self.make_tools = tools
        self.clock = clock

    def system(self, *, compacted: bool, pins: Sequence[str]) -> str:
        """The system prompt: the one place it is assembled."""
        return system_prompt(self.settings.base_prompt, compacted=compacted, pins=pins)

    def system_for(self, session: SessionRecord, pins: Sequence[str]) -> str:
        """The system prompt a request of `session` sends: with the chat's pins, or, where changes are
        told in notes, the pins it carried when its prefix was last rewritten."""
        if self.settings.model.mid_conversation_system and session.prompt_pins is not None:
            pins = session.prompt_pins.system
        return self.system(compacted=session.compaction_count > 0, pins=pins)

    def tools(self, chat_pk: int) -> ToolRegistry:
        return self.make_tools(chat_pk)

    def stored_tokens(self, message: Message) -> int:
        """A message's stored estimate: what it costs in the prompt as sent (oversized ones cut the way
        the loop cuts them, `agent.oversize.Cuts`), uncalibrated like every stored estimate."""
        return self.settings.loop.cuts.tokens(message)

    def tool_tokens(self, chat_pk: int) -> int:
        """Tokens of the tool definitions the chat's requests carry."""
        return estimate_tools(self.tools(chat_pk).schemas())

    def engine(self, session: SessionRecord, pins: Sequence[str] = ()) -> ContextEngine:
        """The session's context engine, with its stored state and a summarizer priced for it."""
        return self.engines(
            context_length=self.settings.model.context_window,
            config=self.settings.compression,
            summarizer=self.summarizer(session, pins),
            count_tokens=self._counter(),
            state=EngineState.from_json(session.engine_state),
        )

    def summarizer(self, session: SessionRecord, pins: Sequence[str] = ()) -> Summarizer:
        """Per call, the cheaper of a standalone summary and one reusing the session's cached prefix."""
        settings = self.settings
        cache = CacheState.from_json(session.cache_state)

        def cache_warm() -> bool:
            return not cache.expired(self.clock())

        return CostAwareSummarizer(
            self.llm,
            main=settings.model,
            aux=settings.summary_model,
            prefix=PrefixContext(
                system=self.system_for(session, pins),
                tools=self.tools(session.chat_pk).schemas(),
                model=settings.model.name,
                cache_ttl=settings.cache_ttl,
            ),
            cache_warm=cache_warm,
            count_tokens=self._counter(),
            aux_client=self.summary_llm,
            pins=pins,
        )

    def conversation(
        self,
        snapshot: TurnSnapshot,
        window: Sequence[Entry[R]],
        *,
        llm: LLMClient,
        engine: ContextEngine,
        plan: TurnCachePlan,
        stream: StreamSink | None,
        ref_label: RefLabel,
        compacted_before: bool = False,
    ) -> Conversation[R]:
        """What every request of a turn (or a cache refresh) over `window` is built from."""
        session = snapshot.session
        return Conversation(
            llm=llm,
            engine=engine,
            window=list(window),
            system=self.system_for(session, snapshot.pins),
            tools=self.tools(session.chat_pk),
            config=self.settings.loop,
            ref_label=ref_label,
            cache_plan=plan,
            stream=stream,
            compacted_before=compacted_before,
        )

    def _counter(self) -> CalibratedCounter:
        return CalibratedCounter(self.settings.loop.calibration)
