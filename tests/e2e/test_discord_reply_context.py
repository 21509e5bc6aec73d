"""A Discord reply reference through the real gateway process and discord.py: the model sees the stored
original even when Discord could not resolve the referenced message, and the bot reacts to what it answers.
"""

from __future__ import annotations

from pathlib import Path

from tests.e2e.test_discord_chat import ANN, BOB, GENERAL, GUILD, discord_world


async def test_a_reply_reference_carries_the_original(tmp_path: Path, sqlite_url: str) -> None:
    async with discord_world(tmp_path, sqlite_url, REPLY__ACK_REACTION="👀") as w:
        dc = w.dc
        original = dc.push_message(
            GENERAL, "the cake is in the second fridge", author_id=BOB, username="bob", guild_id=GUILD
        )
        await w.wait_rows(GENERAL, lambda rows: len(rows) == 1)
        question = 0

        def ask() -> int:
            nonlocal question
            question = dc.push_message(
                GENERAL,
                "which one?",
                author_id=ANN,
                username="ann",
                guild_id=GUILD,
                mentions_bot=True,
                reply_to_message_id=original,
                resolved=False,  # Discord sends referenced_message: null (deleted or not loaded)
            )
            return question

        answer = await w.reply_to(ask)
        assert answer.channel_id == GENERAL
        newest = w.last_request_text()
        assert '<reply_to author=\\"bob\\">\\nthe cake is in the second fridge\\n</reply_to>' in newest
        await dc.wait_for(lambda: (GENERAL, question, "👀") in dc.reactions)
        assert (GENERAL, original, "👀") not in dc.reactions, "only messages the bot answers get the reaction"
