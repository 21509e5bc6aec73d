"""The request rules of the models with preserved thinking (the 5.5 family and Fable 5.1), and the thinking
configuration a valid request asks for.

- ``thinking`` absent means ``{"type": "adaptive"}``; ``display`` is ``"omitted"`` by default (the fake's
  ``default_display``), ``"summarized"``, or ``"updates"`` (beta ``thinking-display-updates-2026-08-18``);
  ``block_binding.prefix_mismatch_behavior`` (``"error"`` or ``"drop_block"``) needs beta
  ``thinking-binding-controls-2026-08-01``.
- ``{"type": "between_tools"}`` (no other field) is Sonnet 5.5's lowest setting, with effort at most high.
- 400: ``disabled`` and ``enabled`` thinking, forced ``tool_choice`` (``any``/``tool``) where the model
  refuses it, non-default ``temperature``/``top_p``/``top_k``, and an assistant prefill (the last message
  is the assistant's). ``output_config.effort`` is one of low, medium, high, xhigh, max; unset, it is the
  model's default (``ModelSpec.default_effort``), which is what ``ThinkingConfig.effort`` then holds.

Older models keep the fake's earlier behaviour: ``thinking_config`` returns None for them.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from tests.fakes.anthropic.tokens import ModelSpec
from tests.fakes.anthropic.validation import InvalidRequest

DISPLAY_BETA = "thinking-display-updates-2026-08-18"
BINDING_BETA = "thinking-binding-controls-2026-08-01"
EFFORTS = ("low", "medium", "high", "xhigh", "max")
BETWEEN_TOOLS_EFFORTS = ("low", "medium", "high")
DISPLAYS = ("summarized", "omitted", "updates")

Display = Literal["summarized", "omitted", "updates"]
Mode = Literal["adaptive", "between_tools"]

ENABLED_REFUSED = (
    '"thinking.type.enabled" is not supported for this model. Use "thinking.type.adaptive" and '
    '"output_config.effort" to control thinking behavior.'
)
DISABLED_REFUSED = (
    '"thinking.type.disabled" is not supported for this model. Thinking defaults to adaptive mode when not '
    "specified."
)
DISABLED_REFUSED_BETWEEN_TOOLS = (
    '"thinking.type.disabled" is not supported for this model. Use "thinking.type.between_tools" to turn off '
    "up-front thinking."
)
FORCED_TOOL_REFUSED = "Thinking may not be enabled when tool_choice forces tool use."
PREFILL_REFUSED = (
    "This model does not support assistant message prefill. The conversation must end with a user message."
)


@dataclass(frozen=True, slots=True)
class ThinkingConfig:
    """What a valid request to a model with preserved thinking asks for."""

    mode: Mode = "adaptive"
    display: Display = "omitted"
    drop_block: bool = False
    """``block_binding.prefix_mismatch_behavior`` is ``"drop_block"``."""
    report: bool = False
    """The binding beta was sent: the response carries ``input_transformations``."""
    effort: str = "high"
    """``output_config.effort``, or the model's default when the request sets none."""


def thinking_config(
    body: Mapping[str, Any], betas: Collection[str], spec: ModelSpec, *, default_display: Display = "omitted"
) -> ThinkingConfig | None:
    """The request's thinking configuration (None for a model without preserved thinking), or
    ``InvalidRequest`` as the API refuses the request."""
    if not spec.preserved_thinking:
        return None
    config = _parse_thinking(body.get("thinking"), betas, spec, default_display)
    effort = _check_effort(body.get("output_config"), config)
    config = replace(config, effort=effort or spec.default_effort)
    _check_tool_choice(body.get("tool_choice"), spec)
    _check_sampling(body)
    _check_prefill(body.get("messages") or [])
    return config


def _parse_thinking(value: Any, betas: Collection[str], spec: ModelSpec, default: Display) -> ThinkingConfig:
    report = BINDING_BETA in betas
    if value is None:
        return ThinkingConfig(display=default, report=report)
    if not isinstance(value, Mapping):
        raise InvalidRequest("thinking: Input should be a valid dictionary")
    kind = value.get("type")
    if kind == "enabled":
        raise InvalidRequest(ENABLED_REFUSED)
    if kind == "disabled":
        raise InvalidRequest(DISABLED_REFUSED_BETWEEN_TOOLS if spec.between_tools else DISABLED_REFUSED)
    if kind == "between_tools":
        if not spec.between_tools:
            raise InvalidRequest('"thinking.type.between_tools" is not supported for this model.')
        extra = sorted(set(value) - {"type"})
        if extra:
            raise InvalidRequest(f"thinking.between_tools.{extra[0]}: Extra inputs are not permitted")
        return ThinkingConfig(mode="between_tools", display="summarized", report=report)
    if kind != "adaptive":
        raise InvalidRequest(
            f"thinking: Input tag {kind!r} found using 'type' does not match any of the expected tags: "
            "'adaptive', 'between_tools', 'disabled', 'enabled'"
        )
    extra = sorted(set(value) - {"type", "display", "block_binding"})
    if extra:
        raise InvalidRequest(f"thinking.adaptive.{extra[0]}: Extra inputs are not permitted")
    display = value.get("display")
    if display is None:
        display = default
    elif display not in DISPLAYS:
        raise InvalidRequest(
            "thinking.adaptive.display: Input should be 'summarized', 'omitted' or 'updates'"
        )
    elif display == "updates" and DISPLAY_BETA not in betas:
        raise InvalidRequest(
            f'thinking.adaptive.display: "updates" requires the `anthropic-beta: {DISPLAY_BETA}` header'
        )
    drop_block = _drop_block(value.get("block_binding"), betas)
    return ThinkingConfig(display=display, drop_block=drop_block, report=report)


def _drop_block(binding: Any, betas: Collection[str]) -> bool:
    if binding is None:
        return False
    if BINDING_BETA not in betas:
        raise InvalidRequest(
            f"thinking.adaptive.block_binding: This setting requires the `{BINDING_BETA}` value in the "
            "`anthropic-beta` header."
        )
    if not isinstance(binding, Mapping):
        raise InvalidRequest("thinking.adaptive.block_binding: Input should be a valid dictionary")
    extra = sorted(set(binding) - {"prefix_mismatch_behavior"})
    if extra:
        raise InvalidRequest(f"thinking.adaptive.block_binding.{extra[0]}: Extra inputs are not permitted")
    behavior = binding.get("prefix_mismatch_behavior")
    if behavior not in (None, "error", "drop_block"):
        raise InvalidRequest(
            "thinking.adaptive.block_binding.prefix_mismatch_behavior: Input should be 'error' or "
            "'drop_block'"
        )
    return behavior == "drop_block"


def _check_effort(output_config: Any, config: ThinkingConfig) -> str | None:
    """The request's effort (None when it sets none)."""
    if output_config is None:
        return None
    if not isinstance(output_config, Mapping):
        raise InvalidRequest("output_config: Input should be a valid dictionary")
    effort = output_config.get("effort")
    if effort is None:
        return None
    if effort not in EFFORTS:
        raise InvalidRequest(
            "output_config.effort: Input should be 'low', 'medium', 'high', 'xhigh' or 'max'"
        )
    if config.mode == "between_tools" and effort not in BETWEEN_TOOLS_EFFORTS:
        raise InvalidRequest(
            f'output_config.effort: "{effort}" is not supported with "thinking.type.between_tools". Use '
            '"low", "medium" or "high", or adaptive thinking.'
        )
    return str(effort)


def _check_tool_choice(tool_choice: Any, spec: ModelSpec) -> None:
    forced = isinstance(tool_choice, Mapping) and tool_choice.get("type") in ("any", "tool")
    if forced and not spec.forced_tool_choice:
        raise InvalidRequest(FORCED_TOOL_REFUSED)


def _check_sampling(body: Mapping[str, Any]) -> None:
    """Only the defaults pass: temperature 1, top_p 1, no top_k (null counts as absent)."""
    for name, default in (("temperature", 1), ("top_p", 1), ("top_k", None)):
        value = body.get(name)
        if value is not None and value != default:
            raise InvalidRequest(f"`{name}` is deprecated for this model.")


def _check_prefill(messages: list[Any]) -> None:
    if messages and isinstance(messages[-1], Mapping) and messages[-1].get("role") == "assistant":
        content = messages[-1].get("content")
        last = content[-1] if isinstance(content, list) and content else None
        if isinstance(last, Mapping) and str(last.get("type", "")).endswith(
            ("server_tool_use", "_tool_result")
        ):
            return  # a paused turn sent again to go on (`pause_turn`), not a prefill
        raise InvalidRequest(PREFILL_REFUSED)
