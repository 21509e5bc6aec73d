"""What the bot says besides the model's answers: why a message is not answered (not allowed, too fast,
over budget, a failed turn or command), and what a compaction did (pure renderings; one wording each)."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol
from zoneinfo import ZoneInfo

from agent.compaction.engine import MIN_TARGET_RATIO, Kept, Outcome
from agent.errors import (
    BudgetExceededError,
    ContextOverflowError,
    LLMAuthError,
    LLMBadRequestError,
    LLMError,
    LLMNotFoundError,
    LLMOverloadedError,
    LLMRateLimitError,
    LLMServerError,
    LLMStreamCutError,
    LLMUnavailableError,
)


class CompactionFigures(Protocol):
    """What the compaction wordings read of a compaction's report: its numbers and outcome."""

    @property
    def outcome(self) -> Outcome: ...
    @property
    def reason(self) -> str: ...
    @property
    def messages_before(self) -> int: ...
    @property
    def messages_after(self) -> int: ...
    @property
    def tokens_before(self) -> int: ...
    @property
    def tokens_after(self) -> int: ...
    @property
    def duration_s(self) -> float: ...
    @property
    def changed(self) -> bool: ...
    @property
    def idle(self) -> bool: ...
    @property
    def kept(self) -> Kept | None: ...


KEPT = "Your message is saved; send it again or just say \u201cretry\u201d and I\u2019ll pick it up."
"""After a failure that may pass (a limit, an overload, the connection): trying again can help."""

KEPT_UNTIL_FIXED = "Your message is saved and will be answered with your next message once that is fixed."
"""After a failure that only the bot's configuration can end: sending it again cannot help before."""

TURN_FAILED_REPLY = (
    "Sorry, I could not answer just now because of an internal problem. Your messages are saved and "
    "will be answered with your next message."
)
"""Told once when a chat's turn still fails on storage after its retries."""

RATE_LIMITED = (
    "You're sending messages faster than I can answer. I kept this one; "
    "please wait a minute before asking again."
)
"""The refusal when a sender is over `limits.user_messages_per_minute` (the message is kept)."""

CONVERSATION_TOO_LONG = (
    "This conversation has grown too long for the model to read, and compacting it cannot make enough "
    "room. Send /new to start a fresh conversation (this one stays searchable with recall), then ask "
    "again."
)
"""The reply when the request still overflows the model's window after the turn compacted what it
could (or with compression.enabled: false): retrying cannot help, a fresh conversation does."""

COMMAND_STORAGE_DOWN = "Storage is unavailable right now; please try the command again in a minute."
"""The reply to a command while the database is down (commands are not spooled)."""


def not_allowed(user_id: str) -> str:
    """The reply to an unauthorized user in a private chat (it names the id an admin would allow)."""
    return (
        f"Sorry, you are not allowed to use this bot. Your user id is {user_id}; "
        "an admin can add it to the allowed users."
    )


def budget_spent(exc: BudgetExceededError, now: datetime, *, answer_after_reset: bool) -> str:
    """The reply when a budget is spent: which one, its cap, when it resets, and what becomes of the
    message."""
    later = (
        "I kept your message and will answer it then."
        if answer_after_reset
        else "I kept your message; send it again after that for an answer."
    )
    return f"{budget_sentence(exc)} It resets {resets_in(exc.resets_at, now)}. {later}"


def budget_sentence(exc: BudgetExceededError) -> str:
    owner = exc.budget[0].upper() + exc.budget[1:]
    return f"{owner} (${exc.cap_usd:.2f}) is spent."


def budget_cut_turn(exc: BudgetExceededError, now: datetime) -> str:
    """The note a reply ends with when a spending cap stopped its turn before the next model call."""
    resets = resets_in(exc.resets_at, now)
    return f"(Stopped here: {exc.budget} (${exc.cap_usd:.2f}) is spent; it resets {resets}.)"


def budget_warning(budget: str, cap_usd: float, share: float) -> str:
    """What admins are told once when a budget passes its warning share."""
    return f"Heads-up: {budget} has passed {share:.0%} of its ${cap_usd:.2f} cap."


def resets_in(resets_at: datetime, now: datetime) -> str:
    """`at 00:00 Europe/Lisbon (in 3 h 20 min)`, `on 1 Jan 00:00 UTC (in 26 days)`."""
    left = max(0, int((resets_at - now).total_seconds()))
    hours, minutes = divmod(left // 60, 60)
    when = resets_at.strftime("%H:%M") if left < 86_400 else resets_at.strftime("%-d %b %H:%M")
    zone = resets_at.tzname() or "UTC"
    if left >= 2 * 86_400:
        span = f"{left // 86_400} days"
    elif hours:
        span = f"{hours} h {minutes} min"
    else:
        span = f"{max(1, minutes)} min"
    return f"{'at' if left < 86_400 else 'on'} {when} {zone} (in {span})"


def bad_command_args(name: str, problem: str) -> str:
    return f"/{name}: {problem}."


def command_failed(name: str, exc: Exception) -> str:
    return f"/{name} failed: {exc}"


REFUSAL_CATEGORIES = {
    "cyber": "it could help cause harm to computer systems",
    "bio": "it could help cause biological harm",
    "frontier_llm": "it could help build a competing AI model",
    "reasoning_extraction": "it asks the assistant to reveal its internal reasoning",
    "general_harms": "it touches an area the model treats as harmful",
}


def refused(category: str | None) -> str:
    """The reply when the model declined (nothing of its answer is kept): short, saying why when the API
    names a reason, and what the person can do."""
    why = REFUSAL_CATEGORIES.get(category or "")
    reason = f" because {why}" if why else ""
    return (
        f"The assistant declined to answer this message{reason}. If that seems wrong, try rephrasing "
        "it, or ask something else."
    )


RAN_OUT_OF_ROOM = (
    "The assistant spent its whole answer budget thinking and wrote no reply, twice. Try asking a "
    "narrower question, or an admin can raise agent.max_output_tokens."
)
"""The reply when a turn's reply ran out of room while thinking, even after a retry with more room."""

NO_REPLY = "The assistant finished without writing a reply. Send your message again to get one."
"""The reply when the model ended its turn with nothing to say (never an empty message)."""


def empty_reply(stop_reason: str | None) -> str:
    """What to say when a turn ended without reply text."""
    return RAN_OUT_OF_ROOM if stop_reason == "max_tokens" else NO_REPLY


def human_error(exc: LLMError) -> str:
    """The reply when the model could not answer (the message stays stored and pending): what happened
    in plain words, and "send it again" only where trying again can help."""
    if isinstance(exc, BudgetExceededError):
        return budget_sentence(exc)
    if isinstance(exc, LLMRateLimitError):
        return f"The assistant has hit its request limit for the moment (rate limited). {KEPT}"
    if isinstance(exc, LLMOverloadedError):
        return f"The assistant is overloaded right now. {KEPT}"
    if isinstance(exc, LLMAuthError):
        return (
            "The assistant is not available: the bot's API key was rejected. An admin needs to fix it. "
            + KEPT_UNTIL_FIXED
        )
    if isinstance(exc, ContextOverflowError):
        return CONVERSATION_TOO_LONG
    if isinstance(exc, LLMNotFoundError):
        return (
            "The assistant is not available: the model this bot is set to use does not exist (the API "
            f"does not know it). An admin needs to fix the bot's model setting. {KEPT_UNTIL_FIXED}"
        )
    if isinstance(exc, LLMBadRequestError):
        return (
            "The assistant could not answer: the API refused the request built from this conversation, so "
            "sending it again will not help. Your message is saved; an admin can find the reason in the "
            "bot's log, and /new starts a fresh conversation."
        )
    if isinstance(exc, LLMServerError):
        return f"The assistant\u2019s service had an internal error. {KEPT}"
    if isinstance(exc, LLMStreamCutError):
        return f"The connection to the assistant dropped while it was answering. {KEPT}"
    if isinstance(exc, LLMUnavailableError):
        return f"The assistant is unreachable at the moment. {KEPT}"
    return f"The assistant\u2019s answer could not be read (an unexpected reply from its service). {KEPT}"


def cut_off(written: str) -> str:
    """A reply whose stream was cut in the middle: what had arrived, then a note that it is incomplete
    (the message stays pending, so the next message or "retry" gets a whole answer)."""
    note = f"(Cut off: the connection to the assistant dropped before this reply was finished. {KEPT})"
    return f"{written.rstrip()}\n\n{note}"


def turn_failed(exc: LLMError, written: str) -> str:
    """The reply of a turn the model could not finish, `written` being the reply text streamed so far
    (shown while it was written): a cut stream ends what was shown with a note, never looking
    complete; any other failure is told as `human_error`."""
    if isinstance(exc, LLMStreamCutError) and written.strip():
        return cut_off(written)
    return human_error(exc)


def compaction_notice(report: CompactionFigures) -> str:
    """The one-line notice a reply carries when a compaction ran during its turn."""
    if report.outcome is Outcome.OK:
        return (
            f"(Context compacted: {report.messages_before}\u2192{report.messages_after} messages, "
            f"{report.tokens_before:,}\u2192{report.tokens_after:,} tokens.)"
        )
    if report.idle:
        return f"(Context not compacted: {NOTHING_YET}.)"
    return f"(Context compaction {report.outcome.value}: {report.reason})"


NOTHING_YET = "nothing to shorten yet"
KEPT_VERBATIM = (
    "the first exchange and the newest messages (at least the last {n}, more when they are short) are "
    "always kept word for word, so the thread of the conversation is never lost"
)
START_OVER = "/new starts over (the old conversation stays searchable)"


def compaction_result(
    report: CompactionFigures, protect_last_n: int, *, context_before: int, context_after: int
) -> str:
    """The answer to `/compact`: what it did, or in plain words why there was nothing to do. The context
    sizes are the chat's, counted as `/stats` and the thresholds count them."""
    short = report.messages_before <= protect_last_n + 2
    if report.idle or (not report.changed and (short or report.outcome is Outcome.OK)):
        return nothing_to_compact(report, protect_last_n, context=context_before)
    head = f"Compaction {report.outcome.value}"
    if report.outcome is not Outcome.OK:
        head += f" ({report.reason})"
    return (
        f"{head}: {report.messages_before}\u2192{report.messages_after} messages; the context went from "
        f"{context_before:,} to {context_after:,} tokens (as /stats counts it) in {report.duration_s:.1f} s."
    )


def nothing_to_compact(report: CompactionFigures, protect_last_n: int, *, context: int) -> str:
    """Every "nothing to do" answer to `/compact`: the context size, what is kept word for word in
    numbers, what sized it and the setting that moves it."""
    opening = f"Nothing to compact yet: the context is {context:,} tokens"
    kept = report.kept
    if kept is None:  # an engine that does not say what it keeps
        return (
            f"{opening} ({report.messages_before:,} messages); {KEPT_VERBATIM.format(n=protect_last_n)}, "
            "and there is nothing between them that a summary would make smaller. Compaction starts to "
            f"help once the conversation grows; {START_OVER}."
        )
    head = f"the first exchange (~{kept.head_tokens:,} tokens)"
    if kept.tail_messages == 0:
        return f"{opening}; {head} is kept word for word and nothing came after it to summarize yet."
    tail = f"the newest ~{kept.tail_tokens:,} tokens (the last {kept.tail_messages:,} messages)"
    if kept.middle_messages:
        middle = max(0, report.tokens_before - kept.head_tokens - kept.tail_tokens)
        return (
            f"{opening}; {head} and {tail} are kept word for word, and the "
            f"{kept.middle_messages:,} messages between them (~{middle:,} tokens) are the current summary "
            "or would not get smaller as one. Compaction helps again once the conversation grows; "
            f"{START_OVER}."
        )
    return (
        f"{opening}; {head} and {tail} are kept word for word, so there is nothing in between to summarize. "
        + (tail_reason(kept))
    )


def tail_reason(kept: Kept) -> str:
    """Why the kept tail is as large as it is, in numbers, with the setting that makes it smaller."""
    budget = (
        f"{kept.tail_budget:,} tokens ({kept.target_ratio:.0%} of the {kept.threshold_tokens:,}-token "
        "compaction threshold; compression.target_ratio, compression.threshold)"
    )
    if kept.tail_tokens <= kept.tail_budget:
        grows = kept.head_tokens + kept.tail_budget
        lower = (
            f"lower compression.target_ratio ({MIN_TARGET_RATIO:.0%} at least)"
            if kept.target_ratio > MIN_TARGET_RATIO
            else "lower compression.threshold (compression.target_ratio is at its "
            f"{MIN_TARGET_RATIO:.0%} floor)"
        )
        return (
            f"The tail keeps the newest messages that fit in its budget of {budget}, so compaction starts "
            f"to help once the messages pass about {grows:,} tokens. To keep less word for word, {lower}; "
            f"{START_OVER}."
        )
    if kept.tail_messages <= kept.protect_last_n + 1:
        return (
            f"The tail keeps at least the last {kept.protect_last_n:,} messages (compression.protect_last_n) "
            f"while they fit in {kept.tail_cap:,} tokens (half the threshold), beyond its budget of "
            f"{budget}. "
            f"To keep fewer, lower compression.protect_last_n; {START_OVER}."
        )
    return (
        f"The tail is beyond its budget of {budget} because it always holds the newest question and every "
        f"message still awaiting a reply, and opens with a user message; {START_OVER}."
    )


# Reminders -------------------------------------------------------------------------------------------

REMINDER_MARK = "⏰"
REPEAT_NOTE = "(may be a repeat: the previous attempt was interrupted)"


def local_time(when: datetime, tz: str) -> str:
    """`Tue 8 Dec 2026, 09:00 CET`: a time as the chat reads it, in its zone."""
    local = when.astimezone(ZoneInfo(tz))
    return f"{local:%a} {local.day} {local:%b %Y, %H:%M} {local.tzname()}"


def repeat_text(rrule: str | None) -> str:
    return "once" if not rrule else f"repeats {rrule}"


def reminder_scheduled(
    reminder_id: int, kind: str, text: str, first: datetime, tz: str, rrule: str | None
) -> str:
    what = "Reminder" if kind == "reminder" else "Task"
    repeat = f", {repeat_text(rrule)}" if rrule else ""
    return f'{REMINDER_MARK} {what} #{reminder_id} set for {local_time(first, tz)} ({tz}){repeat}: "{text}"'


def reminder_message(text: str, *, late_since: datetime | None, tz: str, interrupted: bool) -> str:
    """A reminder as the chat receives it: the text as written, framed, with why it is late or may repeat."""
    lines = [f"{REMINDER_MARK} Reminder: {text}"]
    if late_since is not None:
        lines.append(f"(sent late: it was due {local_time(late_since, tz)}, while the bot was down)")
    if interrupted:
        lines.append(REPEAT_NOTE)
    return "\n".join(lines)


def task_instruction(text: str, due: datetime, tz: str) -> str:
    """What a scheduled task's turn reads as its instruction."""
    return f"[Scheduled task, due {local_time(due, tz)}] {text}"


def reminder_missed(text: str, due: datetime, tz: str, window_h: float) -> str:
    return (
        f"{REMINDER_MARK} Missed reminder: {text}\n(it was due {local_time(due, tz)}; the bot was down for "
        f"longer than {window_h:g} h after that, so it was not sent on its own)"
    )


def reminder_limit(max_active: int) -> str:
    return f"This chat already has {max_active} pending reminders, the most it may have. Cancel one first."


def reminders_list(lines: list[str], tz: str) -> str:
    if not lines:
        return f"No pending reminders. (Time zone: {tz}.)"
    return f"Pending reminders ({tz}):\n" + "\n".join(lines) + "\nCancel one with /reminders cancel <id>."


def reminder_line(
    reminder_id: int, kind: str, text: str, due: datetime | None, tz: str, rrule: str | None
) -> str:
    when = local_time(due, tz) if due is not None else "-"
    what = "" if kind == "reminder" else " [task]"
    short = text if len(text) <= 80 else text[:79] + "…"
    return f"#{reminder_id} {when}, {repeat_text(rrule)}{what}: {short}"


def reminder_cancelled(reminder_id: int) -> str:
    return f"Reminder #{reminder_id} cancelled."


def reminder_not_found(reminder_id: int) -> str:
    return f"There is no pending reminder #{reminder_id} in this chat (see /reminders)."


def reminder_not_yours(reminder_id: int, creator: str | None) -> str:
    who = creator or "someone else"
    return f"Reminder #{reminder_id} was set by {who}; only they or an admin can cancel it."


def timezone_set(tz: str, now: datetime) -> str:
    return f"Time zone for this chat: {tz} (now {local_time(now, tz)})."


def timezone_unknown(name: str) -> str:
    return f"Unknown time zone {name!r}. Use an IANA name such as Europe/Berlin, America/New_York or UTC."
