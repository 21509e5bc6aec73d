"""Request validation for the fake Anthropic API: the rules the real Messages API enforces, with its messages.

Server-side compaction's request rules (the edit, the beta header, the models) are in
``compaction``; here only the ``compaction`` content block's shape.

Mid-conversation system messages (``role: "system"``, a string or text blocks) are accepted by the models
that have them (``ModelSpec.system_messages``: Opus 4.8 and the 5.5 family) right after a user turn only;
other models refuse the role. They are skipped when roles are checked to alternate.

Strict mode (the default) also rejects two things the real API quietly tolerates, because they are bugs in
the caller: consecutive messages with the same role (the real API merges them) and unknown top-level keys.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from tests.fakes.anthropic.media import MediaError, validate_media
from tests.fakes.anthropic.tokens import ModelSpec

MAX_CACHE_BREAKPOINTS = 4
KNOWN_BLOCK_TYPES = frozenset(
    {
        "text", "image", "document", "tool_use", "tool_result", "thinking", "redacted_thinking",
        "search_result", "compaction", "server_tool_use", "web_search_tool_result", "web_fetch_tool_result",
    }
)  # fmt: skip
COMPACTION_KEYS = frozenset(
    {"type", "content", "encrypted_content", "signature", "tool_changes", "cache_control"}
)
KNOWN_TOP_LEVEL = frozenset(
    {
        "model", "messages", "max_tokens", "system", "tools", "tool_choice", "temperature", "top_p",
        "top_k", "stop_sequences", "stream", "metadata", "thinking", "service_tier", "container",
        "mcp_servers", "context_management", "output_config", "output_format", "inference_geo", "speed",
        "cache_control", "diagnostics",
    }
)  # fmt: skip
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")


class InvalidRequest(Exception):
    """A request the real API would refuse; carries the HTTP status and the API's error type."""

    def __init__(self, message: str, *, status: int = 400, error_type: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.error_type = error_type


def resolve_model(body: Mapping[str, Any], models: Mapping[str, ModelSpec]) -> ModelSpec:
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise InvalidRequest("model: Field required")
    spec = models.get(model)
    if spec is None:
        raise InvalidRequest(f"model: {model}", status=404, error_type="not_found_error")
    return spec


def prompt_too_long(tokens: int, spec: ModelSpec) -> InvalidRequest:
    return InvalidRequest(f"prompt is too long: {tokens} tokens > {spec.context_window} maximum")


def exceeds_context(tokens: int, max_tokens: int, spec: ModelSpec) -> InvalidRequest:
    """What the API answers when the prompt fits but prompt + max_tokens does not (400)."""
    return InvalidRequest(
        f"input length and `max_tokens` exceed context limit: {tokens} + {max_tokens} > "
        f"{spec.context_window}, decrease input length or `max_tokens` and try again"
    )


def validate_request(
    body: Any,
    models: Mapping[str, ModelSpec],
    *,
    strict: bool = True,
    count_tokens: bool = False,
) -> ModelSpec:
    """Check a /v1/messages (or count_tokens) body; return the model it names or raise ``InvalidRequest``."""
    if not isinstance(body, Mapping):
        raise InvalidRequest("body: Input should be a valid dictionary")
    spec = resolve_model(body, models)
    if strict:
        unknown = sorted(set(body) - KNOWN_TOP_LEVEL)
        if unknown:
            raise InvalidRequest(f"{unknown[0]}: Extra inputs are not permitted")
    if not count_tokens:
        _check_max_tokens(body.get("max_tokens"), spec)
    tool_names = _check_tools(body.get("tools"))
    _check_system(body.get("system"))
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise InvalidRequest("messages: at least one message is required")
    _check_messages(messages, tool_names, strict=strict, system_messages=spec.system_messages)
    _check_cache_markers(body)
    _check_diagnostics(body.get("diagnostics", {}))
    try:
        validate_media(body, context_window=spec.context_window)
    except MediaError as exc:
        raise InvalidRequest(exc.message, status=exc.status, error_type=exc.error_type) from None
    return spec


def _check_max_tokens(value: Any, spec: ModelSpec) -> None:
    if value is None:
        raise InvalidRequest("max_tokens: Field required")
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidRequest("max_tokens: Input should be a valid integer")
    if value < 0:  # 0 is a cache pre-warm: the prompt is read and cached, nothing is generated
        raise InvalidRequest("max_tokens: Input should be greater than or equal to 0")
    if value > spec.max_output:
        raise InvalidRequest(
            f"max_tokens: {value} > {spec.max_output}, which is the maximum allowed number of output tokens "
            f"for {spec.id}"
        )


def _check_tools(tools: Any) -> set[str]:
    if tools is None:
        return set()
    if not isinstance(tools, list):
        raise InvalidRequest("tools: Input should be a valid list")
    names: set[str] = set()
    for i, tool in enumerate(tools):
        if not isinstance(tool, Mapping):
            raise InvalidRequest(f"tools.{i}: Input should be a valid dictionary")
        name = tool.get("name")
        if not isinstance(name, str) or not TOOL_NAME.match(name):
            raise InvalidRequest(f"tools.{i}.custom.name: String should match pattern '{TOOL_NAME.pattern}'")
        if tool.get("type") in (None, "custom") and not isinstance(tool.get("input_schema"), Mapping):
            raise InvalidRequest(f"tools.{i}.custom.input_schema: Field required")
        if tool.get("allowed_domains") and tool.get("blocked_domains"):
            raise InvalidRequest(
                f"tools.{i}: Cannot specify both allowed_domains and blocked_domains in the same request"
            )
        if name in names:
            raise InvalidRequest("tools: Tool names must be unique.")
        names.add(name)
    return names


def _check_system(system: Any) -> None:
    if system is None or isinstance(system, str):
        return
    if not isinstance(system, list):
        raise InvalidRequest("system: Input should be a valid string or a list of text blocks")
    for i, block in enumerate(system):
        if not isinstance(block, Mapping) or block.get("type") != "text":
            raise InvalidRequest(f"system.{i}.type: Input should be 'text'")
        _check_text_block(block, f"system.{i}")


def _check_text_block(block: Mapping[str, Any], where: str) -> None:
    text = block.get("text")
    if not isinstance(text, str):
        raise InvalidRequest(f"{where}.text: Field required")
    if not text:
        if "cache_control" in block:
            raise InvalidRequest(f"{where}: cache_control cannot be set for empty text blocks")
        raise InvalidRequest(f"{where}: text content blocks must be non-empty")


def _blocks(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return list(content) if isinstance(content, list) else []


def _merge_same_roles(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """What the real API does with consecutive same-role messages (used only outside strict mode)."""
    merged: list[dict[str, Any]] = []
    for message in messages:
        if merged and merged[-1]["role"] == message.get("role"):
            merged[-1]["content"] = _blocks(merged[-1]) + _blocks(message)
        else:
            merged.append({"role": message.get("role"), "content": message.get("content")})
    return merged


UNEXPECTED_SYSTEM_ROLE = (
    'Unexpected role "system". The Messages API accepts a top-level system parameter, not "system" as an '
    "input message role."
)


def _check_system_message(messages: list[Any], i: int, *, supported: bool) -> None:
    """A mid-conversation system message: supported by the model, right after a user turn, text only."""
    if not supported:
        raise InvalidRequest(UNEXPECTED_SYSTEM_ROLE)
    if i == 0 or not isinstance(messages[i - 1], Mapping) or messages[i - 1].get("role") != "user":
        raise InvalidRequest(f'messages.{i}: a "system" message must come right after a "user" message')
    content = messages[i].get("content")
    if isinstance(content, str):
        if not content:
            raise InvalidRequest(f"messages.{i}: all messages must have non-empty content")
        return
    if not isinstance(content, list) or not content:
        raise InvalidRequest(f"messages.{i}.content: Input should be a valid string or a list of text blocks")
    for j, block in enumerate(content):
        if not isinstance(block, Mapping) or block.get("type") != "text":
            raise InvalidRequest(f"messages.{i}.content.{j}.type: Input should be 'text'")
        _check_text_block(block, f"messages.{i}.content.{j}")


def _check_messages(
    messages: list[Any], tool_names: set[str], *, strict: bool, system_messages: bool = False
) -> None:
    last = len(messages) - 1
    previous: str | None = None  # the role of the last user or assistant message
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise InvalidRequest(f"messages.{i}: Input should be a valid dictionary")
        role = message.get("role")
        if role == "system":
            _check_system_message(messages, i, supported=system_messages)
            continue
        if role not in ("user", "assistant"):
            raise InvalidRequest(f"messages.{i}.role: Input should be 'user' or 'assistant'")
        if i == 0 and role != "user" and not _opens_with_compaction(message):
            raise InvalidRequest('messages: first message must use the "user" role')
        if strict and previous == role and not (role == "assistant" and _ends_paused(messages[i - 1])):
            raise InvalidRequest(
                f'messages: roles must alternate between "user" and "assistant", '
                f'but found multiple "{role}" roles in a row'
            )
        previous = role
        _check_content(message, i, tool_names, final_assistant=(i == last and role == "assistant"))
    turns = [(i, m) for i, m in enumerate(messages) if m.get("role") != "system"]
    _check_tool_pairing(turns if strict else list(enumerate(_merge_same_roles([m for _, m in turns]))))


def _ends_paused(message: Any) -> bool:
    """An assistant message ending with a server tool block: a turn the API paused (`pause_turn`), whose
    continuation may follow as the next assistant message."""
    blocks = _blocks(message) if isinstance(message, Mapping) else []
    return (
        bool(blocks)
        and isinstance(blocks[-1], Mapping)
        and blocks[-1].get("type") in ("server_tool_use", "web_search_tool_result", "web_fetch_tool_result")
    )


def _opens_with_compaction(message: Mapping[str, Any]) -> bool:
    """A request may start with an assistant message whose first block is a compaction block: the client
    sends the conversation from its newest server-side compaction on."""
    blocks = _blocks(message)
    return bool(blocks) and isinstance(blocks[0], Mapping) and blocks[0].get("type") == "compaction"


def _check_compaction_block(block: Mapping[str, Any], role: str, where: str) -> None:
    if role != "assistant":
        raise InvalidRequest(f"{where}: compaction blocks may only appear in assistant messages")
    extra = sorted(set(block) - COMPACTION_KEYS)
    if extra:
        raise InvalidRequest(f"{where}.compaction.{extra[0]}: Extra inputs are not permitted")
    for key in ("content", "encrypted_content", "signature"):
        if block.get(key) is not None and not isinstance(block[key], str):
            raise InvalidRequest(f"{where}.compaction.{key}: Input should be a valid string")
    if block.get("content") == "":
        raise InvalidRequest(
            f"{where}.compaction.content: empty content is not allowed (null marks a failed one)"
        )
    if block.get("tool_changes") is not None and not isinstance(block["tool_changes"], list):
        raise InvalidRequest(f"{where}.compaction.tool_changes: Input should be a valid list")


def _check_content(
    message: Mapping[str, Any], i: int, tool_names: set[str], *, final_assistant: bool
) -> None:
    content = message.get("content")
    if not isinstance(content, (str, list)):
        raise InvalidRequest(f"messages.{i}.content: Input should be a valid string or list")
    if not content:
        if final_assistant:
            return
        raise InvalidRequest(
            f"messages.{i}: all messages must have non-empty content except for the optional final "
            "assistant message"
        )
    if isinstance(content, str):
        return
    role = message["role"]
    for j, block in enumerate(content):
        where = f"messages.{i}.content.{j}"
        if not isinstance(block, Mapping) or block.get("type") not in KNOWN_BLOCK_TYPES:
            raise InvalidRequest(f"{where}: Input tag does not match any of the expected content block types")
        kind = block["type"]
        if kind == "text":
            _check_text_block(block, where)
        elif kind == "compaction":
            _check_compaction_block(block, role, where)
        elif kind == "tool_use":
            if role != "assistant":
                raise InvalidRequest(f"{where}: tool_use blocks may only appear in assistant messages")
            if not isinstance(block.get("id"), str) or not isinstance(block.get("input"), Mapping):
                raise InvalidRequest(f"{where}: tool_use blocks need a string id and an object input")
            if block.get("name") not in tool_names:
                raise InvalidRequest(
                    f"{where}: tool_use name {block.get('name')!r} is not defined in the request's tools"
                )
        elif kind == "tool_result":
            if role != "user":
                raise InvalidRequest(f"{where}: tool_result blocks may only appear in user messages")
            if not isinstance(block.get("tool_use_id"), str):
                raise InvalidRequest(f"{where}.tool_use_id: Field required")


def _check_tool_pairing(turns: Sequence[tuple[int, Mapping[str, Any]]]) -> None:
    """Each tool_use is answered first thing in the next user message; each tool_result answers one.
    ``turns`` are the user and assistant messages with their index in the request."""
    for position, (i, message) in enumerate(turns):
        blocks = _blocks(message)
        if message.get("role") == "user":
            previous = _blocks(turns[position - 1][1]) if position > 0 else []
            offered = {b.get("id") for b in previous if b.get("type") == "tool_use"}
            seen_other = False
            for j, block in enumerate(blocks):
                if block.get("type") != "tool_result":
                    seen_other = True
                    continue
                if seen_other:
                    raise InvalidRequest(
                        f"messages.{i}.content.{j}: tool_result blocks must come before any other content "
                        "in the user message that answers the tool_use blocks"
                    )
                if block.get("tool_use_id") not in offered:
                    raise InvalidRequest(
                        f"messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: "
                        f"{block.get('tool_use_id')}. Each `tool_result` block must have a corresponding "
                        "`tool_use` block in the previous message."
                    )
            continue
        ids = [b.get("id") for b in blocks if b.get("type") == "tool_use"]
        if len(ids) != len(set(ids)):
            raise InvalidRequest(f"messages.{i}: `tool_use` ids must be unique")
        if not ids:
            continue
        following = _blocks(turns[position + 1][1]) if position + 1 < len(turns) else []
        answered = {b.get("tool_use_id") for b in following if b.get("type") == "tool_result"}
        missing = [str(x) for x in ids if x not in answered]
        if missing:
            raise InvalidRequest(
                f"messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately after: "
                f"{', '.join(missing)}. Each `tool_use` block must have a corresponding `tool_result` block "
                "in the next message."
            )


def _cache_markers(body: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """Every cache_control in processing order (tools, system, messages) with where it sits."""
    found: list[tuple[str, Any]] = []
    for i, tool in enumerate(body.get("tools") or []):
        if "cache_control" in tool:
            found.append((f"tools.{i}", tool["cache_control"]))
    system = body.get("system")
    if isinstance(system, list):
        for i, block in enumerate(system):
            if "cache_control" in block:
                found.append((f"system.{i}", block["cache_control"]))
    for i, message in enumerate(body.get("messages") or []):
        content = message.get("content")
        if isinstance(content, list):
            for j, block in enumerate(content):
                if "cache_control" in block:
                    found.append((f"messages.{i}.content.{j}", block["cache_control"]))
        if "cache_control" in message:
            found.append((f"messages.{i}", message["cache_control"]))
    return found


def _check_automatic_marker(body: Mapping[str, Any], markers: list[tuple[str, Any]]) -> int:
    """Automatic caching: a top-level `cache_control` takes one of the 4 breakpoint slots; the API
    rejects it when an explicit marker on the last block asks for a different TTL. Returns its slots."""
    top = body.get("cache_control")
    if top is None:
        return 0
    if not isinstance(top, Mapping) or top.get("type") != "ephemeral":
        raise InvalidRequest("cache_control.type: Input should be 'ephemeral'")
    ttl = top.get("ttl", "5m")
    if ttl not in ("5m", "1h"):
        raise InvalidRequest("cache_control.ttl: Input should be '5m' or '1h'")
    last = last_block_marker(body)
    if last is not None and isinstance(last, Mapping) and last.get("ttl", "5m") != ttl:
        raise InvalidRequest(
            "cache_control: the top-level cache_control TTL must match the cache_control on the last block"
        )
    return 0 if last is not None else 1


def last_block_marker(body: Mapping[str, Any]) -> Any:
    """The explicit cache_control of the request's last block (None when it has none)."""
    messages = body.get("messages") or []
    if not messages:
        return None
    message = messages[-1]
    content = message.get("content")
    if isinstance(content, list) and content:
        return content[-1].get("cache_control") or message.get("cache_control")
    return message.get("cache_control")


def _check_cache_markers(body: Mapping[str, Any]) -> None:
    markers = _cache_markers(body)
    seen_5m = False
    for where, marker in markers:
        if marker is None:
            continue
        if not isinstance(marker, Mapping) or marker.get("type") != "ephemeral":
            raise InvalidRequest(f"{where}.cache_control.type: Input should be 'ephemeral'")
        extra = sorted(set(marker) - {"type", "ttl"})
        if extra:
            raise InvalidRequest(f"{where}.cache_control.{extra[0]}: Extra inputs are not permitted")
        ttl = marker.get("ttl", "5m")
        if ttl not in ("5m", "1h"):
            raise InvalidRequest(f"{where}.cache_control.ttl: Input should be '5m' or '1h'")
        if ttl == "1h" and seen_5m:
            raise InvalidRequest(
                "a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block. "
                "Note that blocks are processed in the following order: `tools`, `system`, `messages`."
            )
        seen_5m = seen_5m or ttl == "5m"
    count = sum(1 for _, marker in markers if marker is not None) + _check_automatic_marker(body, markers)
    if count > MAX_CACHE_BREAKPOINTS:
        raise InvalidRequest(
            f"A maximum of {MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided. Found {count}."
        )


def _check_diagnostics(value: Any) -> None:
    if not isinstance(value, Mapping):
        raise InvalidRequest("diagnostics: Input should be a valid dictionary")
    extra = sorted(set(value) - {"previous_message_id"})
    if extra:
        raise InvalidRequest(f"diagnostics.{extra[0]}: Extra inputs are not permitted")
    previous = value.get("previous_message_id")
    if previous is not None and not isinstance(previous, str):
        raise InvalidRequest("diagnostics.previous_message_id: Input should be a valid string")
