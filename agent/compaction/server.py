"""`context.engine: server`: the Messages API compacts the conversation itself (server-side compaction).

Every reply request carries `context_management` with the `compact_20260112` edit, triggered at the
compressor's threshold (50% of the window by default). When a request's input passes it, the API
summarizes the whole conversation in the same call and answers from the summary; the response starts
with a `compaction` block. That response is stored like any reply, and this engine then *adopts* the
compaction: every stored message before it leaves the window into the archive (where `recall` finds
it), exactly as a compaction of our own would archive the middle. Later requests start at the
compaction block, which travels verbatim (`agent.messages.compaction_on_wire`).

The API will not trigger below 50,000 input tokens. Where the threshold is lower (a small window), or
when a compaction is asked for outside a reply call (`/compact`, hygiene, the idle job), this engine
compacts with the built-in compressor, whose summary then replaces the compaction block like any other
message of the middle.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from typing import Any

from agent.compaction.compressor import ContextCompactor
from agent.compaction.engine import CompactionResult, Outcome
from agent.types import Message, blocks_of

logger = logging.getLogger(__name__)

BETA = "compact-2026-01-12"
EDIT_TYPE = "compact_20260112"
MIN_TRIGGER_TOKENS = 50_000
"""The least `trigger` the API accepts."""
ADOPTED = "the API compacted the conversation (server-side compaction)"


class ServerCompaction(ContextCompactor):
    """Server-side compaction at the threshold; the built-in compressor for everything else."""

    name = "server"
    min_trigger_tokens = MIN_TRIGGER_TOKENS
    """The API's floor; a deployment whose endpoint documents another one overrides it in a subclass."""

    @property
    def server_trigger(self) -> int | None:
        """The input size at which the API compacts, or None when the threshold is below its minimum."""
        if not self.config.enabled or self.threshold_tokens < self.min_trigger_tokens:
            return None
        return self.threshold_tokens

    def request_options(self) -> tuple[dict[str, Any], tuple[str, ...]] | None:
        trigger = self.server_trigger
        if trigger is None:
            return None
        edit = {"type": EDIT_TYPE, "trigger": {"type": "input_tokens", "value": trigger}}
        return {"edits": [edit]}, (BETA,)

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        """The API compacts inside the reply call at the threshold; the loop's own check is only the
        fallback below the API's minimum trigger."""
        if self.server_trigger is not None:
            return False
        return super().should_compress(prompt_tokens)

    async def compress(
        self,
        messages: Sequence[Message],
        *,
        focus: str | None = None,
        force: bool = False,
        keep_from: int | None = None,
    ) -> CompactionResult:
        """Adopt a compaction the API made (everything before its block leaves the window), or compact
        with the built-in compressor when there is none to adopt. An adoption ignores `keep_from`: the
        API compacted those messages in the call that answers them."""
        msgs = list(messages)
        newest = max((i for i, m in enumerate(msgs) if _summary_of(m)), default=None)
        if newest is None or self.state.adopted_compaction == _fingerprint(msgs[newest]):
            return await super().compress(msgs, focus=focus, force=force, keep_from=keep_from)
        return self._adopt(msgs, newest)

    def _adopt(self, msgs: list[Message], newest: int) -> CompactionResult:
        """Everything before the newest compaction block leaves the window: the API no longer shows it
        to the model, so it only made our estimates wrong until archived."""
        tokens = [self.count_tokens(m) for m in msgs]
        kept = msgs[newest:]
        self.state.previous_summary = _summary_of(msgs[newest])
        self.state.adopted_compaction = _fingerprint(msgs[newest])
        self.state.compression_count += 1
        self.state.awaiting_effect = False
        before, after = sum(tokens), sum(tokens[newest:])
        logger.info(
            "adopted a server-side compaction: %d messages archived, %d -> %d tokens", newest, before, after
        )
        return CompactionResult(
            messages=kept,
            origin=tuple(range(newest, len(msgs))),
            removed_indices=tuple(range(newest)),
            pruned_indices=(),
            outcome=Outcome.OK,
            reason=ADOPTED,
            tokens_before=before,
            tokens_after=after,
        )


def _summary_of(message: Message) -> str:
    """The summary of the message's compaction block ("" when it has none, or the compaction failed:
    the API then answered from the whole conversation, so nothing may leave the window)."""
    return next(
        (str(b["content"]) for b in blocks_of(message) if b.get("type") == "compaction" and b.get("content")),
        "",
    )


def _fingerprint(message: Message) -> str:
    """Identifies a compaction block across loads (its summary, or its opaque payload)."""
    block = next(b for b in blocks_of(message) if b.get("type") == "compaction")
    payload = f"{block.get('content') or ''}\x00{block.get('encrypted_content') or ''}"
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:32]
