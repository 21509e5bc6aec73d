"""How settings become the gateway's parts: the reply model at its planned window, the summary model, the
loop's limits, what a session's agent is built from, the compaction policy, who may talk to the bot, the
prompt-cache TTL and the model line printed at start-up (pure). Misconfigured models stop the start-up
here with one line naming the setting."""

from __future__ import annotations

import dataclasses
import logging
from datetime import timedelta

from agent.compaction.engine import CompactionConfig
from agent.compaction.registry import EngineFactory, UnknownEngineError, resolve_engine
from agent.compaction.server import ServerCompaction
from agent.loop import LoopConfig
from agent.models import MODELS, CacheTTL, ModelInfo, lookup_model
from agent.server_tools import ServerTools, WebFetch, WebSearch, pins_too_new
from agent.spending.periods import Caps
from agent.tokens import Calibration
from gateway.compaction.triggers import CompactionPolicy
from gateway.config import DEFAULT_PLANNED_WINDOW, ConfigError, Settings
from gateway.intake.auth import AccessPolicy, policy_from_ids
from gateway.turn.kit import KitSettings

logger = logging.getLogger(__name__)

THINKING_ROOM = 16_000
"""The smallest reply budget on a model that thinks adaptively (its thinking counts toward it), within a
quarter of the window."""


def cache_ttl_of(settings: Settings) -> CacheTTL | None:
    if not settings.prompt_caching.enabled:
        return None
    ttl = settings.prompt_caching.cache_ttl
    if ttl == "auto" or ttl == "api":
        return "5m"
    return ttl


def main_model(settings: Settings) -> ModelInfo:
    """The reply model with `context_window` set to the planned window: what every compaction threshold
    is a share of. The operator's `context.planned_window` (or its older name `MODEL_CONTEXT_LENGTH`),
    else the model's window capped at `DEFAULT_PLANNED_WINDOW`. A planned window larger than a known
    model's window is refused (the API would refuse the prompts compaction lets grow that far)."""
    legacy, planned = settings.model_context_length, settings.context.planned_window
    if legacy is not None and planned is not None and legacy != planned:
        raise ConfigError(
            f"context.planned_window ({planned:,}) and its older name MODEL_CONTEXT_LENGTH ({legacy:,}) "
            "disagree: set one"
        )
    model = lookup_model(settings.model)
    window = settings.planned_window
    if window is None:
        window = min(model.context_window, DEFAULT_PLANNED_WINDOW)
    elif model.known and window > model.context_window:
        raise ConfigError(
            f"context.planned_window: {window:,} tokens is more than {model.name}'s window "
            f"({model.context_window:,})"
        )
    return dataclasses.replace(model, context_window=window)


def summary_model(settings: Settings, main: ModelInfo) -> ModelInfo:
    """The model standalone summaries are written by. Its window must hold the largest middle it may be
    sent: a session is compacted at the latest when hygiene finds it near the planned window, and one
    turn can carry it up to that window, so the middle (all but the head and the protected tail) is
    bounded by the planned window itself; a smaller window would fail every such summary call and the
    compactor would drop the middle unsummarized."""
    aux = lookup_model(settings.summary_model)
    if aux.context_window < main.context_window:
        raise ConfigError(
            f"auxiliary.compression.model: {aux.name}'s window ({aux.context_window:,} tokens) is smaller "
            f"than the planned window ({main.context_window:,}) whose middle it may summarize; choose a "
            "model with a larger window or a smaller context.planned_window"
        )
    return aux


def check_models(settings: Settings) -> None:
    """The start-up checks of the reply and summary models (before any connection is made), and that
    the reply model takes the web tool versions pinned for it."""
    summary_model(settings, main_model(settings))
    for name, pinned, newest in pins_too_new(server_tools(settings), lookup_model(settings.model)):
        raise ConfigError(
            f"tools.{name}.version (TOOLS__{name.upper()}__VERSION) = {pinned}: {settings.model} takes "
            f"{name} versions up to {newest}; set auto or an older version"
        )


def model_status_line(settings: Settings, model: ModelInfo) -> str:
    ttl: str | None = cache_ttl_of(settings)
    if ttl and settings.prompt_caching.cache_ttl == "auto":
        ttl = "auto: 5m/1h/none per chat"
    elif ttl and settings.prompt_caching.cache_ttl == "api":
        ttl = "api: the API's automatic caching, 5m"
    caching = f"ENABLED ({ttl} TTL)" if ttl else "disabled"
    comp = settings.compression
    compression = (
        f"compression at {comp.threshold:.0%}, hygiene at {comp.hygiene_threshold:.0%}, engine "
        f"{settings.context.engine}"
        if comp.enabled
        else "compression disabled"
    )
    full = lookup_model(settings.model).context_window
    window = (
        f"window {full:,} tokens, compaction plans for {model.context_window:,}"
        if full > model.context_window
        else f"window {model.context_window:,} tokens"
    )
    return (
        f"model: {model.name} ({window}); prompt caching: {caching}; "
        f"{compression}; "
        f"summaries by {settings.summary_model}"
    )


def context_engine(settings: Settings) -> EngineFactory:
    """The configured context engine's factory, found once at start-up: an unknown or broken engine
    stops the start-up with one line naming `context.engine` (every turn would fail otherwise)."""
    try:
        factory = resolve_engine(settings.context.engine, plugins_dir=settings.context.plugins_dir)
    except UnknownEngineError as exc:
        raise ConfigError(f"context.engine: {exc}") from exc
    except Exception as exc:  # a plugin that fails to import
        raise ConfigError(
            f"context.engine: engine {settings.context.engine!r} failed to load: {type(exc).__name__}: {exc}"
        ) from exc
    if isinstance(factory, type) and issubclass(factory, ServerCompaction):
        _check_server_compaction(settings, factory.min_trigger_tokens)
    return factory


def _check_server_compaction(settings: Settings, min_trigger: int) -> None:
    """`server` needs a model the API compacts for; below the API's minimum trigger it falls back to the
    built-in compressor, which is worth one line at start-up."""
    model = main_model(settings)
    if not model.server_compaction:
        able = ", ".join(m.name for m in MODELS.values() if m.server_compaction)
        raise ConfigError(
            f"context.engine: 'server' needs a model with server-side compaction ({able}); "
            f"{settings.model} has none"
        )
    threshold = int(model.context_window * settings.compression.threshold)
    if threshold < min_trigger:
        logger.warning(
            "context.engine server: the compressor threshold (%d tokens) is below the API's minimum "
            "compaction trigger (%d); the built-in compressor compacts this window instead",
            threshold,
            min_trigger,
        )


def loop_config(settings: Settings, model: ModelInfo, calibration: Calibration) -> LoopConfig:
    """The agent loop's limits (the turn's cache plan is set per turn)."""
    budget = settings.agent.max_output_tokens
    if model.preserved_thinking:  # thinking counts toward max_tokens: leave it room besides the reply
        budget = max(budget, min(THINKING_ROOM, model.context_window // 4))
    return LoopConfig(
        model=model,
        max_tokens=min(budget, model.max_output),
        effort=settings.agent.effort,
        max_iterations=settings.agent.max_iterations,
        tool_output_max_chars=settings.agent.tool_output_max_chars,
        calibration=calibration,
        server_tools=server_tools(settings),
    )


def server_tools(settings: Settings) -> ServerTools:
    """The API's own tools every reply request offers (`tools.web_search`, `tools.web_fetch`)."""
    search, fetch = settings.tools.web_search, settings.tools.web_fetch
    location = search.user_location.model_dump(exclude_none=True) if search.user_location else None
    return ServerTools(
        search=WebSearch(
            max_uses=search.max_uses,
            allowed_domains=search.allowed_domains,
            blocked_domains=search.blocked_domains,
            user_location=location or None,
            version=search.version,
        )
        if search.enabled
        else None,
        fetch=WebFetch(
            max_uses=fetch.max_uses,
            allowed_domains=fetch.allowed_domains,
            blocked_domains=fetch.blocked_domains,
            max_content_tokens=fetch.max_content_tokens,
            version=fetch.version,
        )
        if fetch.enabled
        else None,
    )


def kit_settings(settings: Settings, model: ModelInfo, loop: LoopConfig) -> KitSettings:
    """What a session's agent is built from (`gateway.turn.kit.SessionKit`)."""
    comp = settings.compression
    return KitSettings(
        model=model,
        summary_model=summary_model(settings, model),
        base_prompt="\n\n".join(
            p for p in (settings.agent.system_prompt, loop.server_tools.prompt_note()) if p
        ),
        compression=CompactionConfig(
            enabled=comp.enabled,
            threshold=comp.threshold,
            target_ratio=comp.target_ratio,
            protect_last_n=comp.protect_last_n,
        ),
        loop=loop,
        cache_ttl=cache_ttl_of(settings),
    )


def compaction_policy(settings: Settings, model: ModelInfo) -> CompactionPolicy:
    sched = settings.scheduler
    return CompactionPolicy(
        enabled=settings.compression.enabled,
        context_length=model.context_window,
        hygiene_threshold=settings.compression.hygiene_threshold,
        cache_aware_share=sched.cache_aware_share,
        proactive_share=sched.proactive_share,
        idle=timedelta(minutes=sched.idle_minutes),
    )


def authorization_policy(settings: Settings) -> AccessPolicy:
    return policy_from_ids(
        admins={"telegram": settings.telegram_admin_ids, "discord": settings.discord_admin_ids},
        allowed={"telegram": settings.telegram_allowed_users, "discord": settings.discord_allowed_users},
        allow_all=settings.gateway_allow_all_users,
    )


def spending_caps(settings: Settings) -> Caps:
    """The hard spending caps (`limits.*_budget_usd`), their time zone and warning share."""
    limits = settings.limits
    return Caps(
        bot_day=limits.bot_daily_budget_usd,
        bot_month=limits.bot_monthly_budget_usd,
        user_day=limits.user_daily_budget_usd,
        chat_day=limits.chat_daily_budget_usd,
        chat_month=limits.chat_monthly_budget_usd,
        timezone=limits.budget_timezone,
        warn_share=limits.budget_warn_share,
    )


def caps_text(caps: Caps) -> str:
    """`bot $50.00/day, chat $5.00/day; days in UTC; admins told at 80%` (uncapped scopes left out)."""
    named = [
        ("bot", caps.bot_day, "day"),
        ("bot", caps.bot_month, "month"),
        ("user", caps.user_day, "day"),
        ("chat", caps.chat_day, "day"),
        ("chat", caps.chat_month, "month"),
    ]
    shown = [f"{who} ${usd:.2f}/{per}" for who, usd, per in named if usd > 0]
    if not shown:
        return "none (every LIMITS__*_BUDGET_USD is 0)"
    return f"{', '.join(shown)}; days in {caps.timezone}; admins told at {caps.warn_share:.0%}"
