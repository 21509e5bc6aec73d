"""/pin, /pins and /unpin: facts a chat keeps word for word in every request, whatever is compacted.

Admins may pin in any chat; in a private chat its user may too. Pins belong to the chat: `/new`,
compaction and restarts leave them alone. A pin changes the system prompt, so the next request writes
the cached prefix once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gateway.commands.menu import CommandContext, Handler
from gateway.platforms.base import ChatKind
from gateway.store import PinLimitError, PinLimits, PinRecord, Store

USAGE = "Usage: /pin <fact to keep word for word>, or send /pin as a reply to the message to pin."
NOT_ALLOWED = "In groups only the bot's admins can change pins. Nothing was changed."


def pins_listing(pins: list[PinRecord], limits: PinLimits) -> str:
    if not pins:
        return "No pinned facts in this chat. Pin one with /pin <fact>."
    tokens = sum(p.token_estimate for p in pins)
    lines = [
        f"Pinned facts ({len(pins)} of {limits.max_count}; ~{tokens:,} of {limits.max_tokens:,} tokens):"
    ]
    lines.extend(f"{n}. {p.text}" for n, p in enumerate(pins, start=1))
    lines.append("Remove one with /unpin N.")
    return "\n".join(lines)


@dataclass
class PinHandlers:
    store: Store
    limits: PinLimits
    count_tokens: Callable[[str], int]

    def handlers(self) -> dict[str, Handler]:
        return {"pin": self.pin, "pins": self.list, "unpin": self.unpin}

    @staticmethod
    def _may_change(ctx: CommandContext) -> bool:
        return ctx.is_admin or ctx.message.chat.kind is ChatKind.PRIVATE

    async def pin(self, ctx: CommandContext) -> str:
        if not self._may_change(ctx):
            return NOT_ALLOWED
        text = ctx.args.strip() or await self._replied_text(ctx)
        if not text:
            return USAGE
        tokens = self.count_tokens(text)
        try:
            pins = await self.store.add_pin(
                ctx.chat_pk,
                text,
                token_estimate=tokens,
                limits=self.limits,
                author_id=ctx.message.author.user_id,
                author_name=ctx.message.author.display_name,
                source_message_id=ctx.message.platform_message_id,
            )
        except PinLimitError as exc:
            return f"Not pinned. {exc}"
        return f"Pinned as #{len(pins)} (~{tokens:,} tokens). I'll keep it word for word; /pins lists them."

    async def _replied_text(self, ctx: CommandContext) -> str:
        """`/pin` sent as a reply pins the replied-to message: the part quoted, else our stored copy
        (within this chat), else the platform's copy."""
        reply = ctx.message.reply_to
        if reply is None:
            return ""
        if reply.quote:
            return reply.quote.strip()
        if reply.platform_message_id is not None:
            stored = await self.store.original_message(ctx.chat_pk, reply.platform_message_id)
            if stored is not None and stored.text.strip():
                return stored.text.strip()
        return reply.text.strip()

    async def list(self, ctx: CommandContext) -> str:
        return pins_listing(await self.store.pins(ctx.chat_pk), self.limits)

    async def unpin(self, ctx: CommandContext) -> str:
        if not self._may_change(ctx):
            return NOT_ALLOWED
        arg = ctx.args.strip().lstrip("#")
        if not arg.isdigit():
            return "Usage: /unpin N, where N is the pin's number in /pins."
        removed = await self.store.remove_pin(ctx.chat_pk, int(arg))
        if removed is None:
            count = len(await self.store.pins(ctx.chat_pk))
            return f"There is no pin #{arg} (this chat has {count}). /pins lists them."
        return f"Unpinned #{arg}: {removed.text}"
