"""A context-engine plugin as a third party would ship it, in `plugins/context_engine/keeper/`.

It never summarizes: a compaction keeps the first message and the newest `protect_last_n` messages and
replaces the rest with one note pointing at `recall` (the gateway archives what it removes).
"""

from __future__ import annotations

from collections.abc import Sequence

from agent.compaction.engine import CompactionResult, ContextEngine, Outcome
from agent.compaction.prompt import frame
from agent.compaction.registry import register_context_engine
from agent.types import Message

NOTE = "[{n} earlier messages are archived; search them with the recall tool]"


class KeeperEngine(ContextEngine):
    name = "keeper"

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        size = prompt_tokens if prompt_tokens is not None else self.state.last_prompt_tokens
        return self.config.enabled and size is not None and size >= self.threshold_tokens

    async def compress(
        self,
        messages: Sequence[Message],
        *,
        focus: str | None = None,
        force: bool = False,
        keep_from: int | None = None,
    ) -> CompactionResult:
        msgs = list(messages)
        before = sum(self.count_tokens(m) for m in msgs)
        keep = max(1, self.config.protect_last_n)
        start = len(msgs) - keep
        if keep_from is not None:
            start = min(start, keep_from)  # messages awaiting a reply are never dropped
        while start > 1 and msgs[start]["role"] != "user":
            start -= 1  # the kept part starts with a user message
        if start <= 1:
            return CompactionResult(
                msgs, tuple(range(len(msgs))), (), (), Outcome.ABORTED, "nothing to drop", before, before
            )
        text = NOTE.format(n=start - 1)
        note: Message = {"role": "assistant", "content": frame(text)}
        kept = [msgs[0], note, *msgs[start:]]
        after = sum(self.count_tokens(m) for m in kept)
        self.state.compression_count += 1
        return CompactionResult(
            messages=kept,
            origin=(0, None, *range(start, len(msgs))),
            removed_indices=tuple(range(1, start)),
            pruned_indices=(),
            outcome=Outcome.OK,
            reason=f"kept the first and the newest {len(msgs) - start} messages",
            tokens_before=before,
            tokens_after=after,
            summary=text,
            summary_role="assistant",
        )


register_context_engine("keeper", KeeperEngine)
