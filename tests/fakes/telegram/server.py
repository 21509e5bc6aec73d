"""A fake Telegram Bot API server on 127.0.0.1 that python-telegram-bot talks to over real HTTP.

    async with FakeTelegram(token="123:abc") as tg:
        app = ApplicationBuilder().token("123:abc").base_url(tg.base_url).base_file_url(tg.base_file_url)
        tg.push_message(42, "hello", user_id=42)
        await tg.wait_sent(1)

It answers the methods a gateway uses with Telegram's status codes and descriptions: long polling with
offsets, strict HTML validation (see `html_parser`), the 4096 UTF-16 unit limit, flood control
webhook registration and delivery (see `webhooks`), and files (`getFile` and downloads, see `files`).
Tests inject updates with
`push_message`/`push_update`/`push_photo`/`push_album`... and read `sent`, `actions`, `commands`, `requests`.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import aiohttp
from aiohttp import web
from telegram.constants import ReactionEmoji

from tests.fakes.telegram.files import TelegramFiles
from tests.fakes.telegram.html_parser import HtmlParseError, parse_html, utf16_len
from tests.fakes.telegram.webhooks import TelegramWebhooks
from tests.fakes.telegram.wire import (
    FAULTS,
    MAX_TEXT,
    ApiError,
    Draft,
    Fault,
    Params,
    Sent,
    error_response,
    scope_key,
)

REACTION_EMOJI = frozenset(e.value for e in ReactionEmoji)
"""The emoji Telegram accepts as a bot's reaction (`ReactionTypeEmoji.emoji`); others are REACTION_INVALID."""


class FakeTelegram(TelegramWebhooks, TelegramFiles):
    def __init__(
        self,
        *,
        token: str = "123456:TEST-token",
        bot_id: int | None = None,
        username: str = "gateway_test_bot",
        first_name: str = "Gateway",
        strict_chats: bool = False,
        deliver_webhooks: bool = False,
        webhook_retry_s: float = 0.2,
    ) -> None:
        """`deliver_webhooks`: POST queued updates to the registered webhook as Telegram does (off: tests
        deliver them with `deliver_webhook`)."""
        bot_id = bot_id if bot_id is not None else int(token.split(":", 1)[0])
        super().__init__(bot={"id": bot_id, "is_bot": True, "first_name": first_name, "username": username})
        self.token = token
        self.strict_chats = strict_chats
        self.sent: list[Sent] = []
        self.drafts: list[Draft] = []
        self.actions: list[dict[str, Any]] = []
        self.reactions: list[dict[str, Any]] = []
        """setMessageReaction calls that succeeded: chat_id, message_id, reaction (list of ReactionType)."""
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.conflicts = 0
        """Waiting getUpdates calls ended with 409 by a newer one (two pollers, or a dead poller's)."""
        self._poll_generation = 0
        self._waiting_polls = 0
        self._commands: dict[str, list[dict[str, str]]] = {}
        self._updates: list[dict[str, Any]] = []
        self._faults: dict[str, deque[Fault]] = {}
        self._changed = asyncio.Condition()
        self._runner: web.AppRunner | None = None
        self._closing = False
        self._next_message_id = 1000
        self.port = 0
        self._init_files()
        self._init_webhooks(deliver=deliver_webhooks, retry_s=webhook_retry_s)
        self.update_answers: list[tuple[float, list[int]]] = []
        """(monotonic time, update ids) of every getUpdates answer that carried updates, once sent."""
        self.on_updates_sent: Callable[[list[int]], None] | None = None
        """Called right after a getUpdates answer carrying updates was written to the client (a test
        can kill the gateway at that moment: it has the updates, nothing is confirmed yet)."""

    # Lifecycle -----------------------------------------------------------------------------------

    async def __aenter__(self) -> FakeTelegram:
        app = web.Application()
        app.router.add_route("*", "/bot{token}/{method}", self._handle)
        app.router.add_get("/file/bot{token}/{path:.+}", self._serve_file)
        self._runner = web.AppRunner(app, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = self._runner.addresses[0][1]
        self._start_delivery()
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._closing = True
        await self._stop_delivery()
        await self._notify()
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/bot"

    @property
    def base_file_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/file/bot"

    # Control -------------------------------------------------------------------------------------

    def push_update(self, update: dict[str, Any]) -> dict[str, Any]:
        """Queue a raw Update for getUpdates, or for the webhook with `deliver_webhooks` (otherwise a
        webhook is not called; use `deliver_webhook`)."""
        self._updates.append(update)
        self._updates.sort(key=lambda u: u["update_id"])
        self._delivery_due.set()
        self._wake()
        return update

    def fail_next(
        self, method: str, *, kind: str = "retry_after", retry_after: int = 1, times: int = 1
    ) -> None:
        """Make the next `times` calls of `method` fail (`parse_error` hits only sends in HTML mode)."""
        if kind not in FAULTS:
            raise ValueError(f"unknown fault kind {kind!r}; known: {sorted(FAULTS)}")
        self._faults.setdefault(method, deque()).extend(Fault(kind, retry_after) for _ in range(times))

    @property
    def commands(self) -> list[dict[str, str]]:
        """The default-scope command menu the bot registered."""
        return self._commands.get(scope_key(None, None), [])

    def called(self, method: str) -> list[dict[str, Any]]:
        return [params for name, params in self.requests if name.lower() == method.lower()]

    async def wait_for(self, predicate: Callable[[], bool], timeout: float = 5.0) -> None:
        async with asyncio.timeout(timeout), self._changed:
            await self._changed.wait_for(predicate)

    async def wait_sent(self, n: int, timeout: float = 5.0) -> list[Sent]:
        await self.wait_for(lambda: len(self.sent) >= n, timeout)
        return self.sent

    async def deliver_webhook(self, url: str, update: dict[str, Any], secret_token: str | None = None) -> int:
        """POST `update` to the bot's webhook the way Telegram does; returns the HTTP status."""
        headers = {"X-Telegram-Bot-Api-Secret-Token": secret_token} if secret_token else {}
        async with (
            aiohttp.ClientSession() as session,
            session.post(url, json=update, headers=headers) as resp,
        ):
            await resp.read()
            return resp.status

    def _wake(self) -> None:
        asyncio.get_running_loop().create_task(self._notify())

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    # HTTP ----------------------------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.Response:
        if request.match_info["token"] != self.token:
            return error_response(ApiError(401, "Unauthorized"))
        method = request.match_info["method"]
        handler = getattr(self, "_m_" + method.lower(), None)
        if handler is None:
            return error_response(ApiError(404, "Not Found"))
        if request.content_type == "application/json":
            values = await request.json() if request.can_read_body else {}
        else:
            values = dict(await request.post())
        self.requests.append((method, values))
        params = Params(values)
        try:
            self._maybe_fail(method, params)
            result = await handler(params)
        except ApiError as exc:
            return error_response(exc)
        finally:
            self._wake()
        response = web.json_response({"ok": True, "result": result})
        if method.lower() == "getupdates" and result:
            await response.prepare(request)
            await response.write_eof()
            ids = [u["update_id"] for u in result]
            self.update_answers.append((time.monotonic(), ids))
            if self.on_updates_sent is not None:
                self.on_updates_sent(ids)
        return response

    def _maybe_fail(self, method: str, params: Params) -> None:
        queue = self._faults.get(method)
        if not queue:
            return
        fault = queue[0]
        if fault.kind == "parse_error" and (params.get_str("parse_mode") or "").upper() != "HTML":
            return
        queue.popleft()
        status, description = FAULTS[fault.kind]
        parameters = {"retry_after": fault.retry_after} if fault.kind == "retry_after" else None
        raise ApiError(status, description.format(retry_after=fault.retry_after), parameters)

    # Bot API methods -----------------------------------------------------------------------------

    async def _m_getme(self, params: Params) -> dict[str, Any]:
        return {
            **self.bot,
            "can_join_groups": True,
            "can_read_all_group_messages": False,
            "supports_inline_queries": False,
        }

    async def _m_getupdates(self, params: Params) -> list[dict[str, Any]]:
        """Like Telegram: every update at or above `offset` is returned (again) until a later call
        passes an offset above its id, which confirms it for good."""
        if self.webhook.get("url"):
            raise ApiError(
                409, "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook first"
            )
        # Telegram allows one getUpdates consumer per bot: a new call ends a waiting one with 409.
        self._poll_generation += 1
        generation = self._poll_generation
        if self._waiting_polls:
            self._wake()
        offset = params.get_int("offset") or 0
        limit = params.get_int("limit") or 100
        timeout = params.get_int("timeout") or 0
        if offset:
            self._updates = [u for u in self._updates if u["update_id"] >= offset]

        def ready() -> bool:
            superseded = generation != self._poll_generation
            return superseded or self._closing or any(u["update_id"] >= offset for u in self._updates)

        if timeout > 0 and not ready():
            self._waiting_polls += 1
            try:
                await self.wait_for(ready, timeout)
            except TimeoutError:
                return []
            finally:
                self._waiting_polls -= 1
            if generation != self._poll_generation:
                self.conflicts += 1
                raise ApiError(
                    409,
                    "Conflict: terminated by other getUpdates request; make sure that only one bot "
                    "instance is running",
                )
        return [u for u in self._updates if u["update_id"] >= offset][:limit]

    async def _m_sendmessage(self, params: Params) -> dict[str, Any]:
        chat_id = self._chat_id(params)
        text, parse_mode = params.get_str("text") or "", params.get_str("parse_mode")
        visible = self._validate_text(text, parse_mode)
        reply = params.get_json("reply_parameters")
        reply_to = (
            reply.get("message_id") if isinstance(reply, dict) else params.get_int("reply_to_message_id")
        )
        self._next_message_id += 1
        message = self._bot_message(
            chat_id, self._next_message_id, visible, params.get_int("message_thread_id")
        )
        self.messages[(chat_id, self._next_message_id)] = message
        self.sent.append(
            Sent(
                chat_id=chat_id,
                text=text,
                parse_mode=parse_mode,
                message_id=self._next_message_id,
                visible_text=visible,
                message_thread_id=params.get_int("message_thread_id"),
                reply_to=reply_to,
                raw=message,
            )
        )
        return message

    async def _m_editmessagetext(self, params: Params) -> dict[str, Any]:
        chat_id = self._chat_id(params)
        message_id = params.get_int("message_id")
        text, parse_mode = params.get_str("text") or "", params.get_str("parse_mode")
        visible = self._validate_text(text, parse_mode)
        previous = [s for s in self.sent if s.chat_id == chat_id and s.message_id == message_id]
        if not previous:
            raise ApiError(400, "Bad Request: message to edit not found")
        if previous[-1].visible_text == visible:
            raise ApiError(
                400, "Bad Request: message is not modified: specified new message content is the same"
            )
        message = self._bot_message(chat_id, message_id or 0, visible, previous[-1].message_thread_id)
        message["edit_date"] = int(time.time())
        self.sent.append(
            Sent(
                chat_id,
                text,
                parse_mode,
                message_id or 0,
                visible,
                previous[-1].message_thread_id,
                edited=True,
            )
        )
        return message

    async def _m_sendmessagedraft(self, params: Params) -> bool:
        """Bot API 10.0: a private chat's ephemeral preview; empty text shows a "Thinking..." placeholder."""
        chat_id = self._chat_id(params)
        chat = self.chats.get(chat_id)
        if (chat.get("type") if chat else ("private" if chat_id > 0 else "supergroup")) != "private":
            raise ApiError(400, "Bad Request: message drafts can be sent only to private chats")
        draft_id = params.get_int("draft_id")
        if not draft_id:
            raise ApiError(400, "Bad Request: draft_id must be non-zero")
        text, parse_mode = params.get_str("text") or "", params.get_str("parse_mode")
        visible = self._validate_text(text, parse_mode) if text else ""
        self.drafts.append(
            Draft(chat_id, draft_id, text, parse_mode, visible, params.get_int("message_thread_id"))
        )
        return True

    async def _m_sendchataction(self, params: Params) -> bool:
        chat_id = self._chat_id(params)
        action = params.get_str("action")
        if action not in {"typing", "upload_photo", "record_voice", "upload_document", "choose_sticker"}:
            raise ApiError(400, "Bad Request: wrong parameter action in request")
        self.actions.append(
            {"chat_id": chat_id, "action": action, "message_thread_id": params.get_int("message_thread_id"),
             "at": time.monotonic()}
        )  # fmt: skip
        return True

    async def _m_setmessagereaction(self, params: Params) -> bool:
        chat_id = self._chat_id(params)
        message_id = params.get_int("message_id")
        if message_id is None or (chat_id, message_id) not in self.messages:
            raise ApiError(400, "Bad Request: MESSAGE_ID_INVALID")
        reaction = params.get_json("reaction") or []
        if not isinstance(reaction, list) or len(reaction) > 1:
            raise ApiError(400, "Bad Request: REACTIONS_TOO_MANY")
        for item in reaction:
            if (
                not isinstance(item, dict)
                or item.get("type") != "emoji"
                or item.get("emoji") not in REACTION_EMOJI
            ):
                raise ApiError(400, "Bad Request: REACTION_INVALID")
        self.reactions.append(
            {"chat_id": chat_id, "message_id": message_id, "reaction": reaction, "at": time.monotonic()}
        )
        return True

    async def _m_setmycommands(self, params: Params) -> bool:
        commands = params.get_json("commands")
        if not isinstance(commands, list) or len(commands) > 100:
            raise ApiError(400, "Bad Request: commands must be a list of at most 100 BotCommand")
        for command in commands:
            name, description = command.get("command", ""), command.get("description", "")
            if not (1 <= len(name) <= 32) or not all(c.islower() or c.isdigit() or c == "_" for c in name):
                raise ApiError(400, "Bad Request: BOT_COMMAND_INVALID")
            if not (1 <= len(description) <= 256):
                raise ApiError(400, "Bad Request: BOT_COMMAND_DESCRIPTION_INVALID")
        key = scope_key(params.get_json("scope"), params.get_str("language_code"))
        self._commands[key] = [{"command": c["command"], "description": c["description"]} for c in commands]
        return True

    async def _m_getmycommands(self, params: Params) -> list[dict[str, str]]:
        return self._commands.get(scope_key(params.get_json("scope"), params.get_str("language_code")), [])

    async def _m_deletemycommands(self, params: Params) -> bool:
        self._commands.pop(scope_key(params.get_json("scope"), params.get_str("language_code")), None)
        return True

    async def _m_answercallbackquery(self, params: Params) -> bool:
        if not params.get_str("callback_query_id"):
            raise ApiError(
                400, "Bad Request: query is too old and response timeout expired or query ID is invalid"
            )
        return True

    async def _m_close(self, params: Params) -> bool:
        return True

    async def _m_logout(self, params: Params) -> bool:
        return True

    # Helpers -------------------------------------------------------------------------------------

    def _chat_id(self, params: Params) -> int:
        chat_id = params.get_int("chat_id")
        if chat_id is None:
            raise ApiError(400, "Bad Request: chat_id is empty")
        if self.strict_chats and chat_id not in self.chats:
            raise ApiError(400, "Bad Request: chat not found")
        return chat_id

    @staticmethod
    def _validate_text(text: str, parse_mode: str | None) -> str:
        if parse_mode is None or parse_mode == "":
            visible = text
        elif parse_mode.upper() == "HTML":
            try:
                visible = parse_html(text)
            except HtmlParseError as exc:
                raise ApiError(400, f"Bad Request: can't parse entities: {exc}") from None
        else:
            raise ApiError(400, "Bad Request: unsupported parse_mode")
        if not visible.strip():
            raise ApiError(400, "Bad Request: message text is empty")
        if utf16_len(visible) > MAX_TEXT:
            raise ApiError(400, "Bad Request: message is too long")
        return visible

    def _bot_message(self, chat_id: int, message_id: int, text: str, thread_id: int | None) -> dict[str, Any]:
        chat = self.chats.get(chat_id) or {"id": chat_id, "type": "private" if chat_id > 0 else "supergroup"}
        message: dict[str, Any] = {
            "message_id": message_id,
            "date": int(time.time()),
            "chat": chat,
            "from": self.bot,
            "text": text,
        }
        if thread_id is not None:
            message["message_thread_id"] = thread_id
            message["is_topic_message"] = True
        return message
