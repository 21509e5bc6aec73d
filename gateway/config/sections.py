"""The sections of `Settings`: one frozen model each, nested under `SECTION__KEY` in the environment."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    AnyHttpUrl,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    field_validator,
    model_validator,
)
from pydantic_settings import NoDecode

from gateway.config.defaults import DEFAULT_EFFORT, DEFAULT_SUMMARY_MODEL

IdSet = Annotated[frozenset[int], NoDecode]


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CompressionSettings(Section):
    enabled: bool = True
    threshold: float = Field(
        0.50, gt=0.0, lt=1.0, description="fraction of the window that triggers compaction"
    )
    target_ratio: float = Field(0.20, ge=0.10, le=0.80, description="share of the threshold kept as tail")
    protect_last_n: int = Field(20, ge=1, description="minimum number of newest messages always kept")
    hygiene_threshold: float = Field(
        0.85, gt=0.0, lt=1.0, description="gateway hygiene fires at this fraction"
    )
    notify: bool = Field(True, description="add a one-line notice to replies when a compaction happened")

    @model_validator(mode="after")
    def _hygiene_above_threshold(self) -> CompressionSettings:
        if self.hygiene_threshold <= self.threshold:
            raise ValueError(
                f"compression.hygiene_threshold ({self.hygiene_threshold}) must be above "
                f"compression.threshold ({self.threshold})"
            )
        return self


class AuxiliaryModelSettings(Section):
    model: str | None = Field(None, description="summary model; default: " + DEFAULT_SUMMARY_MODEL)
    provider: Literal["auto", "main", "anthropic"] = Field(
        "auto",
        description="accepted for older configurations: the gateway speaks only the Anthropic API, so "
        "auto, main and anthropic all mean it (main: the reply model's endpoint, so no base_url)",
    )
    base_url: AnyHttpUrl | None = None

    @model_validator(mode="after")
    def _main_has_no_endpoint(self) -> AuxiliaryModelSettings:
        if self.provider == "main" and self.base_url is not None:
            raise ValueError(
                "auxiliary.compression.provider main uses the reply model's endpoint; drop base_url"
            )
        return self


class AuxiliarySettings(Section):
    compression: AuxiliaryModelSettings = AuxiliaryModelSettings()


class PromptCachingSettings(Section):
    enabled: bool = True
    cache_ttl: Literal["5m", "1h", "auto", "api"] = "auto"
    keep_alive: bool = Field(
        True,
        description="with cache_ttl auto: re-read a chat's cached prompt just before it expires when the "
        "chat's own timing says its next message is likely soon enough to pay for it",
    )

    @property
    def keeps_alive(self) -> bool:
        """Whether the keep-alive job runs: caching on, `auto`, and `keep_alive`."""
        return self.enabled and self.cache_ttl == "auto" and self.keep_alive


class ContextSettings(Section):
    engine: str = Field("compressor", min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    planned_window: int | None = Field(
        None,
        ge=1024,
        description="the window compaction plans for (its thresholds are shares of it); default: the "
        "model's window, at most DEFAULT_PLANNED_WINDOW; MODEL_CONTEXT_LENGTH is the older name",
    )
    plugins_dir: Path = Field(
        Path("plugins"), description="engine plugins are looked up in <plugins_dir>/context_engine/<name>/"
    )


class PinsSettings(Section):
    max_count: int = Field(20, ge=1, le=200, description="pinned facts one chat may keep")
    max_tokens: int = Field(2_000, ge=50, description="tokens all of a chat's pins may use together")


class AgentSettings(Section):
    max_iterations: int = Field(8, ge=1, le=100)
    llm_timeout_s: float = Field(60.0, gt=0, description="one attempt of a model call")
    llm_total_timeout_s: float = Field(90.0, gt=0, description="a model call with all its retries")
    max_output_tokens: int = Field(
        4096,
        ge=256,
        description="the reply's budget; on models that think adaptively (the 5.5 family) thinking "
        "counts toward it, so they get at least THINKING_ROOM",
    )
    effort: Literal["low", "medium", "high", "xhigh", "max"] | None = Field(
        DEFAULT_EFFORT,
        description="output_config.effort on the 5.5 family; `default`: none sent, the model's own "
        "(high on Sonnet 5.5, medium on Opus and Haiku 5.5)",
    )
    tool_output_max_chars: int = Field(20_000, ge=1_000)
    system_prompt: str = (
        "You are a helpful assistant chatting with people in a messaging app. "
        "Answer concisely and in the language of the latest message. "
        "Earlier messages of this chat are kept even when out of view: search them with the recall tool "
        "before saying you don't know what was said."
    )

    @field_validator("effort", mode="before")
    @classmethod
    def _model_default(cls, value: Any) -> Any:
        """`default` sends no effort: the API applies the model's own."""
        return None if isinstance(value, str) and value.strip().lower() == "default" else value


class TranscriptionSettings(Section):
    """Voice notes heard through a speech-to-text endpoint (off by default: the bot says it cannot listen)."""

    provider: Literal["off", "openai"] = Field(
        "off", description="openai: any POST {base_url}/audio/transcriptions endpoint (OpenAI, Groq, whisper)"
    )
    base_url: AnyHttpUrl | None = Field(None, description="API root, e.g. https://api.openai.com/v1")
    api_key: SecretStr | None = Field(None, description="sent as a bearer token; optional for local servers")
    model: str | None = Field(None, min_length=1, description="e.g. whisper-1, whisper-large-v3")
    language: str | None = Field(
        None, min_length=2, max_length=8, description="ISO-639-1 hint (e.g. en); empty: detected"
    )
    prompt: str | None = Field(None, max_length=1000, description="vocabulary hint sent with every note")
    max_duration_s: int = Field(600, ge=1, le=36_000, description="longer voice notes are not sent")
    max_file_mb: int = Field(25, ge=1, le=500, description="larger audio files are not sent (OpenAI: 25 MB)")
    timeout_s: float = Field(60.0, gt=0, le=600, description="one transcription request")

    @model_validator(mode="after")
    def _complete(self) -> TranscriptionSettings:
        if self.provider == "openai" and (self.base_url is None or self.model is None):
            raise ValueError(
                "transcription.provider openai needs transcription.base_url and transcription.model"
            )
        return self


class LimitsSettings(Section):
    """The abuse limits and the hard spending caps (USD at the model table's list prices; 0 disables
    each). Days and months begin at midnight and on the 1st in `budget_timezone`."""

    user_messages_per_minute: int = Field(20, ge=1)
    chat_daily_budget_usd: float = Field(5.0, ge=0.0, description="one chat, per day; 0 disables")
    chat_monthly_budget_usd: float = Field(0.0, ge=0.0, description="one chat, per month; 0 disables")
    user_daily_budget_usd: float = Field(0.0, ge=0.0, description="one user across chats, per day")
    bot_daily_budget_usd: float = Field(0.0, ge=0.0, description="the whole bot, every worker, per day")
    bot_monthly_budget_usd: float = Field(0.0, ge=0.0, description="the whole bot, per month")
    budget_timezone: str = Field("UTC", description="IANA zone the budget days and months are in")
    budget_warn_share: float = Field(
        0.8, gt=0.0, le=1.0, description="admins are told once when a budget passes this share"
    )
    answer_after_reset: bool = Field(
        False, description="a message refused for budget is answered once the budget resets"
    )
    budget_crowded_wait_s: float = Field(
        20.0,
        ge=0.0,
        le=300.0,
        description="a call that fits only once calls in flight settle waits this long for them",
    )
    unanswered_max_age_s: int = Field(
        600, ge=0, description="older unanswered turns get an apology on restart"
    )

    @field_validator("budget_timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown time zone {value!r} (an IANA name such as Europe/Lisbon)") from None
        return value


class SchedulerSettings(Section):
    enabled: bool = True
    idle_minutes: float = Field(30, gt=0, description="quiet minutes before idle compaction")
    proactive_share: float = Field(0.60, gt=0.0, lt=1.0)
    cache_aware_share: float = Field(0.35, gt=0.0, lt=1.0)
    archive_retention_days: int = Field(0, ge=0, description="0 keeps archived messages forever")


class MediaSettings(Section):
    max_file_mb: int = Field(
        20, ge=1, le=2000, description="largest attachment downloaded (Telegram's Bot API allows 20 MB)"
    )
    image_long_edge: int = Field(
        1568, ge=200, le=8000, description="images are downscaled to this long edge before storing"
    )


class ReplySettings(Section):
    ack_reaction: str | None = Field(
        None, description="react with this emoji to a message the bot is going to answer (off when unset)"
    )
    quote_max_chars: int = Field(
        1000, ge=50, le=20_000, description="longest replied-to text or quote shown to the model"
    )

    @field_validator("ack_reaction", mode="before")
    @classmethod
    def _emoji(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = value.strip() or None
        if isinstance(value, str) and (len(value) > 8 or any(c.isspace() or c.isascii() for c in value)):
            raise ValueError("must be one emoji, e.g. 👀 (Telegram accepts only its standard reactions)")
        return value


class ConsoleSettings(Section):
    log_file: Path | None = Field(
        Path("gateway-chat.log"),
        description="in `chat`, logs go to this file so the conversation stays readable; "
        "`off`: only warnings and errors, on stderr",
    )

    @field_validator("log_file", mode="before")
    @classmethod
    def _off(cls, value: Any) -> Any:
        return None if isinstance(value, str) and value.strip().lower() in {"", "off", "none"} else value


class StreamingSettings(Section):
    """Replies shown while the model writes them (Telegram drafts or edits, Discord edits, the console)."""

    enabled: bool = Field(True, description="off: a reply appears only once it is complete")
    interval_s: float = Field(
        1.0, ge=0.2, le=30.0, description="least time between two updates of a reply in a private chat"
    )
    group_interval_s: float = Field(
        3.0,
        ge=0.5,
        le=60.0,
        description="the same in groups (Telegram allows about 20 messages a minute in a group)",
    )


class ObservabilitySettings(Section):
    metrics_port: int | None = Field(None, ge=1, le=65535)
    metrics_host: str = "127.0.0.1"


class FleetSettings(Section):
    """Several workers on one Postgres: who polls Telegram, who connects which Discord shard."""

    worker_name: str | None = Field(None, min_length=1, description="default: <host>:<pid>")
    lease_check_s: float = Field(5.0, gt=0.0, le=60.0, description="heartbeat of a worker's leases")
    standby_retry_s: float = Field(
        5.0, gt=0.0, le=60.0, description="a standby tries to take the Telegram polling lease this often"
    )
    rebalance_s: float = Field(
        10.0,
        gt=0.0,
        le=60.0,
        description="workers look for free Discord shards and their fair share this often",
    )


class DiscordSettings(Section):
    shard_count: int | Literal["auto"] = Field(
        1, description="Discord shards (required from 2,500 guilds); auto: the count Discord recommends"
    )
    identify_interval_s: float = Field(
        5.0, ge=0.0, le=60.0, description="IDENTIFY rate window per concurrency bucket (Discord: 5 s)"
    )

    @field_validator("shard_count")
    @classmethod
    def _positive(cls, value: int | str) -> int | str:
        if isinstance(value, int) and value < 1:
            raise ValueError("must be at least 1, or auto")
        return value
