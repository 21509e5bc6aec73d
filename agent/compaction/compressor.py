"""The built-in context engine: four phases (prune, boundaries, summarize, assemble).

Head = the first exchange (the system prompt travels separately); tail = the newest messages within
`threshold_tokens x target_ratio`, never fewer than `protect_last_n`, always holding the newest user
ask and every message still awaiting a reply (`keep_from`), opening with a user message; everything
between is summarized by one summarizer call and replaced by one framed summary.
Failures never pass silently: abort-class summarizer errors leave the history untouched (`aborted`),
other failures fall back to a smaller slice and then to an extractive summary (`degraded`).

Choices made where the seeds are silent:
- Old tool output is cleared (pruned) in the kept head only; the summarizer reads the middle unpruned,
  with each tool result clipped to `prompt.TOOL_RESULT_CLIP` characters, because the cleared marker
  would hide exactly the facts a summary should keep.
- Role of the summary: a message of its own when both neighbours share a role (it takes the other
  one); otherwise it is merged, as a text block, into the tail's first message when that is a user
  message (after its tool results), else appended to the head's last (user) message. Since the tail
  opens with a user message, the summary is merged into it after an assistant head and stands alone
  (as assistant) after a head ending in a user message. A summary
  merged into a kept message by an earlier compaction is removed there, since the new one updates it.
- An automatic run that finds nothing to compact, or whose result is not smaller, counts as an
  ineffective compaction for the anti-thrash guard; summarizer outages do not. Two in a row pause
  automatic runs until the context has grown by a tail's budget (new material a compaction can remove);
  no state needs a manual `/compact` to clear it.
- The protected tail keeps `protect_last_n` messages only while they fit in half the threshold, so a
  burst of huge messages can still be compacted (its oldest part).
- Input messages are never mutated; unchanged messages are shallow copies sharing their blocks.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from agent import messages as shapes
from agent.compaction import boundaries, prompt
from agent.compaction.engine import (
    CompactionResult,
    ContextEngine,
    Kept,
    Outcome,
    SummaryRequest,
    SummaryResponse,
)
from agent.compaction.prompt import SUMMARY_PREFIX, is_summary_message
from agent.errors import SummarizerError
from agent.server_blocks import has_server_blocks
from agent.types import Block, Message, Role, blocks_of
from agent.usage import Usage

__all__ = ["SUMMARY_PREFIX", "ContextCompactor", "ContextCompressor", "is_summary_message"]

logger = logging.getLogger(__name__)

MIN_EXTRACT_TOKENS = 500
"""Least budget for the extractive part when the summarizer only managed the newer half."""


class _Abort(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _Unusable(Exception):
    """The summarizer answered, but with nothing usable (empty text)."""


@dataclass(frozen=True, slots=True)
class _Summary:
    body: str
    outcome: Outcome
    reason: str
    model: str | None
    usage: Usage | None


@dataclass(frozen=True, slots=True)
class _Assembly:
    messages: list[Message]
    origin: tuple[int | None, ...]
    pruned: tuple[int, ...]
    role: Role
    stubbed: tuple[str, ...]
    superseded: tuple[int, ...]
    """Earlier standalone summaries in the head or tail, removed with the middle."""


class ContextCompactor(ContextEngine):
    """Lossy summarizing compactor (the engine named `compressor`); one instance per session, state
    persisted by the caller."""

    name = "compressor"

    @property
    def tail_token_budget(self) -> int:
        return int(self.threshold_tokens * self.config.clamped_target_ratio)

    @property
    def tail_token_cap(self) -> int:
        """Most tokens `protect_last_n` may keep in the tail (half the threshold)."""
        return max(self.tail_token_budget, self.threshold_tokens // 2)

    @property
    def max_summary_tokens(self) -> int:
        return min(int(self.context_length * prompt.SUMMARY_CONTEXT_SHARE), prompt.MAX_SUMMARY_TOKENS)

    def summary_budget(self, content_tokens: int) -> int:
        return prompt.summary_budget(content_tokens, self.context_length)

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        size = prompt_tokens if prompt_tokens is not None else self.state.last_prompt_tokens
        if not self.config.enabled or size is None or self.paused(size):
            return False
        return size >= self.threshold_tokens

    def paused(self, size: int) -> bool:
        """True while automatic compaction is paused: it resumes once the context has grown by a tail's
        budget since the pause, since only then is there new material a compaction can remove."""
        paused_at = self.state.paused_at_tokens
        return paused_at is not None and size < paused_at + self.tail_token_budget

    def update_from_usage(self, usage: Usage) -> None:
        super().update_from_usage(usage)
        if not self.state.awaiting_effect:
            return
        self.state.awaiting_effect = False
        if usage.prompt_tokens >= self.threshold_tokens:
            self._ineffective(
                f"prompt still {usage.prompt_tokens} tokens after compaction", usage.prompt_tokens
            )
        else:
            self.state.ineffective_auto_compactions = 0

    async def compress(
        self,
        messages: Sequence[Message],
        *,
        focus: str | None = None,
        force: bool = False,
        keep_from: int | None = None,
    ) -> CompactionResult:
        """Compact `messages`; `force=True` (manual /compact) skips the enabled/threshold/pause checks.
        Messages from `keep_from` on (awaiting a reply) always stay in the tail."""
        msgs = list(messages)
        tokens = [self.count_tokens(m) for m in msgs]
        before = sum(tokens)
        refusal = None if force else self._refusal(before)
        if refusal is not None:
            return self._aborted(msgs, before, refusal)
        safe = boundaries.safe_cuts(msgs)
        head, tail = self._bounds(msgs, tokens, safe, keep_from)
        kept = sum(tokens[:head]) + sum(tokens[tail:])
        if tail > head and (self._only_summary(msgs[head:tail]) or kept >= self.threshold_tokens):
            # the tail kept the question of its first reply, and that left nothing new to compact or the
            # window at the threshold: the exchange is summarized whole instead (else the next message
            # compacts again, and the window stays above the threshold for good)
            head, tail = self._bounds(msgs, tokens, safe, keep_from, keep_question=False)
        kept_words = self._kept(tokens, head, tail)
        idle = self._idle_reason(msgs, head, tail)
        if idle is not None:
            return self._not_effective(msgs, before, force, idle, kept_words)

        previous = self.state.previous_summary or prompt.summary_text_in(msgs)
        budget = self.summary_budget(sum(tokens[head:tail]))
        try:
            made = await self._summarize(msgs, head, tail, tokens, safe, previous, focus, budget)
        except _Abort as abort:
            logger.warning("compaction aborted: %s", abort.reason)
            return self._aborted(msgs, before, abort.reason)

        built = self._assemble(msgs, head, tail, made.body)
        after = sum(
            tokens[o] if o is not None and m["content"] is msgs[o]["content"] else self.count_tokens(m)
            for m, o in zip(built.messages, built.origin, strict=True)
        )
        if after >= before:
            larger = f"result not smaller ({after} >= {before} tokens); kept the original"
            return self._not_effective(msgs, before, force, larger, kept_words)

        self._compacted(made.body, force=force)
        log = logger.warning if made.outcome is Outcome.DEGRADED else logger.info
        log(
            "compacted %d of %d messages (%s): %d -> %d tokens; %s",
            tail - head,
            len(msgs),
            made.outcome.value,
            before,
            after,
            made.reason,
        )
        return CompactionResult(
            messages=built.messages,
            origin=built.origin,
            removed_indices=tuple(sorted({*range(head, tail), *built.superseded})),
            pruned_indices=built.pruned,
            outcome=made.outcome,
            reason=made.reason,
            tokens_before=before,
            tokens_after=after,
            summary=made.body,
            summary_role=built.role,
            summarizer_model=made.model,
            summary_usage=made.usage,
            stubbed_tool_ids=built.stubbed,
            kept=kept_words,
        )

    def _refusal(self, before: int) -> str | None:
        """Why an automatic run must not compact now (None: it may)."""
        size = max(before, self.state.last_prompt_tokens or 0)
        if not self.config.enabled:
            return "compression is disabled"
        if self.paused(size):
            return f"automatic compaction is paused: {self.state.pause_reason or 'ineffective runs'}"
        if size < self.threshold_tokens:
            return f"{size} tokens is below the {self.threshold_tokens} threshold"
        return None

    def _idle_reason(self, msgs: list[Message], head: int, tail: int) -> str | None:
        """Why these bounds leave nothing to compact (None: there is a middle worth summarizing)."""
        if tail <= head:
            return "nothing to compact between head and tail"
        if self._only_summary(msgs[head:tail]):
            # re-summarizing the summary alone costs a call and frees nothing
            return "nothing to compact but the current summary"
        return None

    @staticmethod
    def _only_summary(middle: Sequence[Message]) -> bool:
        return all(prompt.without_summaries(m) is None for m in middle)

    def _bounds(
        self,
        msgs: list[Message],
        tokens: list[int],
        safe: list[bool],
        keep_from: int | None,
        *,
        keep_question: bool = True,
    ) -> tuple[int, int]:
        """(end of the protected head, start of the protected tail); the middle is between them.
        `keep_question=False`: a tail that would open with a reply starts at the next question instead
        of bringing the earlier one along."""
        head = boundaries.head_end(msgs, safe)
        tail = boundaries.tail_start(
            tokens,
            head=head,
            budget=self.tail_token_budget,
            protect_last_n=self.config.protect_last_n,
            newest_user=boundaries.newest_user_ask(msgs),
            safe=safe,
            cap=self.tail_token_cap,
            user_at=[m["role"] == "user" for m in msgs],
            keep_from=keep_from,
            keep_question=keep_question,
        )
        return head, tail

    def _kept(self, tokens: Sequence[int], head: int, tail: int) -> Kept:
        """What these bounds keep word for word, with what sized the tail (for the `/compact` answer)."""
        tail = max(tail, head)
        return Kept(
            messages=len(tokens),
            head_messages=head,
            head_tokens=sum(tokens[:head]),
            tail_messages=len(tokens) - tail,
            tail_tokens=sum(tokens[tail:]),
            tail_budget=self.tail_token_budget,
            tail_cap=self.tail_token_cap,
            threshold_tokens=self.threshold_tokens,
            target_ratio=self.config.clamped_target_ratio,
            protect_last_n=self.config.protect_last_n,
        )

    def _compacted(self, body: str, *, force: bool) -> None:
        """The engine state after a compaction that changed the window."""
        self.state.previous_summary = body
        self.state.compression_count += 1
        self.state.last_prompt_tokens = None  # the reported size described the old window
        self.state.paused_at_tokens = None
        self.state.pause_reason = None
        if force:
            self.state.ineffective_auto_compactions = 0
        self.state.awaiting_effect = not force

    # -- phase 3: summarize ------------------------------------------------------------------------

    async def _summarize(
        self,
        msgs: list[Message],
        head: int,
        tail: int,
        tokens: list[int],
        safe: list[bool],
        previous: str | None,
        focus: str | None,
        budget: int,
    ) -> _Summary:
        n = tail - head
        too_small = False
        try:
            response = await self._call(msgs, head, tail, previous, focus, budget)
            return _Summary(
                response.text.strip(), Outcome.OK, f"summarized {n} messages", response.model, response.usage
            )
        except SummarizerError as exc:
            failure = self._failure(exc)
            too_small = exc.too_small
        except _Unusable:
            failure = "summarizer returned an empty summary"

        split = boundaries.split_point(head, tail, tokens, safe)
        if too_small and split is not None:
            # The middle does not fit the summary model: summarize it in two parts, the newer part
            # updating the older part's summary, so nothing has to be extracted instead.
            chunked = await self._in_two_parts(msgs, head, split, tail, previous, focus, budget)
            if chunked is not None:
                return chunked
        if split is None:
            retry = "no smaller slice to retry"
        else:
            try:
                response = await self._call(msgs, split, tail, previous, focus, budget)
            except SummarizerError as exc:
                retry = f"retry on the newer {tail - split} messages failed too: {self._failure(exc)}"
            except _Unusable:
                retry = "retry on the newer half returned an empty summary too"
            else:
                body = response.text.strip()
                older = prompt.extractive_summary(
                    msgs[head:split],
                    previous_summary=None,
                    budget_tokens=max(budget - self._count_text(body), MIN_EXTRACT_TOKENS),
                    count=self._count_text,
                )
                return _Summary(
                    f"{body}\n\n## Earlier Turns (extracted)\n{older}",
                    Outcome.DEGRADED,
                    f"{failure}; summarized the newer {tail - split} messages, "
                    f"extracted the older {split - head}",
                    response.model,
                    response.usage,
                )
        body = prompt.extractive_summary(
            msgs[head:tail], previous_summary=previous, budget_tokens=budget, count=self._count_text
        )
        reason = f"{failure}; {retry}; extractive summary of {n} messages"
        return _Summary(body, Outcome.DEGRADED, reason, None, None)

    async def _in_two_parts(
        self,
        msgs: list[Message],
        head: int,
        split: int,
        tail: int,
        previous: str | None,
        focus: str | None,
        budget: int,
    ) -> _Summary | None:
        """Older part, then newer part updating it; None when the older part fails (the caller retries)."""
        try:
            older = await self._call(msgs, head, split, previous, focus, budget)
        except SummarizerError as exc:
            self._failure(exc)  # abort-class errors stop the compaction here
            return None
        except _Unusable:
            return None
        try:
            newer = await self._call(msgs, split, tail, older.text.strip(), focus, budget)
        except SummarizerError as exc:
            failure = self._failure(exc)
        except _Unusable:
            failure = "summarizer returned an empty summary"
        else:
            return _Summary(
                newer.text.strip(),
                Outcome.OK,
                f"summarized {tail - head} messages in two parts (the whole middle did not fit the summary "
                "model's window)",
                newer.model,
                older.usage + newer.usage,
            )
        extracted = prompt.extractive_summary(
            msgs[split:tail],
            previous_summary=None,
            budget_tokens=max(budget - self._count_text(older.text), MIN_EXTRACT_TOKENS),
            count=self._count_text,
        )
        return _Summary(
            f"{older.text.strip()}\n\n## Later Turns (extracted)\n{extracted}",
            Outcome.DEGRADED,
            f"summary model window too small for the whole middle; summarized the older {split - head} "
            f"messages, the newer part failed ({failure}) and was extracted",
            older.model,
            older.usage,
        )

    async def _call(
        self,
        msgs: list[Message],
        lo: int,
        hi: int,
        previous: str | None,
        focus: str | None,
        budget: int,
    ) -> SummaryResponse:
        middle = [m for m in (prompt.without_summaries(x) for x in msgs[lo:hi]) if m is not None]
        instructions = prompt.build_instructions(
            conversation=prompt.serialize_conversation(msgs[lo:hi]),
            previous_summary=previous,
            focus=focus,
            max_tokens=budget,
            web=any(has_server_blocks(m) for m in msgs[lo:hi]),
        )
        request = SummaryRequest(
            middle=middle,
            previous_summary=previous,
            focus=focus,
            max_tokens=budget,
            instructions=instructions,
            history=msgs,
            middle_start=lo,
            middle_end=hi,
        )
        response = await self.summarizer(request)
        body = prompt.strip_framing(response.text)
        if not body:
            raise _Unusable
        return dataclasses.replace(response, text=body)

    @staticmethod
    def _failure(exc: SummarizerError) -> str:
        text = " ".join(str(exc).split()) or type(exc).__name__
        if exc.abort:
            raise _Abort(f"summarizer unavailable, nothing compacted: {text}") from exc
        kind = "summarizer context too small" if exc.too_small else "summarizer failed"
        return f"{kind}: {text}"

    def _count_text(self, text: str) -> int:
        return self.count_tokens({"role": "user", "content": text})

    # -- phases 1 and 4: prune and assemble --------------------------------------------------------

    def _assemble(self, msgs: list[Message], head: int, tail: int, body: str) -> _Assembly:
        out: list[Message] = []
        origin: list[int | None] = []
        pruned: list[int] = []
        # An earlier summary standing alone in the head or the tail is superseded by the new one (which
        # updates it): it leaves the window with the middle, so a request never carries two summaries.
        superseded = [
            i for i in (*range(head), *range(tail, len(msgs))) if prompt.without_summaries(msgs[i]) is None
        ]
        for i in range(head):
            if i in superseded:
                continue
            cleared = shapes.prune_tool_results(msgs[i])
            if cleared is not None:
                pruned.append(i)
            message = cleared or msgs[i]
            out.append(_kept(message))
            origin.append(i)
        tail_indices = [i for i in range(tail, len(msgs)) if i not in superseded]
        kept_tail = [_kept(msgs[i]) for i in tail_indices]

        framed: Block = {"type": "text", "text": prompt.frame(body)}
        left = out[-1]["role"] if out else None
        right = kept_tail[0]["role"]
        role: Role
        if left == right or (left is None and right == "assistant"):
            role = "user" if right == "assistant" else "assistant"
            out.append({"role": role, "content": prompt.frame(body)})
            origin.append(None)
        elif right == "user":
            role = "user"
            blocks = blocks_of(kept_tail[0])
            n_results = 0
            while n_results < len(blocks) and blocks[n_results].get("type") == "tool_result":
                n_results += 1
            kept_tail[0] = {"role": "user", "content": [*blocks[:n_results], framed, *blocks[n_results:]]}
        else:
            role = "user"
            out[-1] = {"role": "user", "content": [*blocks_of(out[-1]), framed]}
        out.extend(kept_tail)
        origin.extend(tail_indices)

        repaired, report = shapes.repair_tool_pairs(out)
        if report.orphaned_result_ids:
            logger.warning(
                "tool results without their call kept as text: %s", ", ".join(report.orphaned_result_ids)
            )
        for position in report.inserted_at:
            origin.insert(position, None)
        return _Assembly(
            repaired, tuple(origin), tuple(pruned), role, report.stubbed_use_ids, tuple(superseded)
        )

    # -- outcomes ----------------------------------------------------------------------------------

    def _aborted(self, msgs: list[Message], tokens: int, reason: str) -> CompactionResult:
        return CompactionResult(
            messages=msgs,
            origin=tuple(range(len(msgs))),
            removed_indices=(),
            pruned_indices=(),
            outcome=Outcome.ABORTED,
            reason=reason,
            tokens_before=tokens,
            tokens_after=tokens,
        )

    def _not_effective(
        self, msgs: list[Message], tokens: int, force: bool, reason: str, kept: Kept
    ) -> CompactionResult:
        if not force:
            self._ineffective(reason, max(tokens, self.state.last_prompt_tokens or 0))
        logger.info("compaction aborted: %s", reason)
        return dataclasses.replace(self._aborted(msgs, tokens, reason), idle=True, kept=kept)

    def _ineffective(self, why: str, size: int) -> None:
        self.state.ineffective_auto_compactions += 1
        if self.state.ineffective_auto_compactions >= 2 and self.state.paused_at_tokens is None:
            self.state.paused_at_tokens = size
            self.state.pause_reason = why
            logger.warning(
                "automatic compaction paused after %d ineffective runs (%s); it resumes by itself once the "
                "context grows past %d tokens",
                self.state.ineffective_auto_compactions,
                why,
                size + self.tail_token_budget,
            )


ContextCompressor = ContextCompactor
"""The earlier name, kept for engine plugins that subclass the built-in engine."""


def _kept(message: Message) -> Message:
    """A kept message: a shallow copy, minus any summary an earlier compaction merged into it."""
    stripped = prompt.without_summaries(message)
    if stripped is None or stripped is message:
        return {"role": message["role"], "content": message["content"]}
    return stripped
