"""The one `Settings` object, built at start-up from the environment, `.env` and an optional `config.yaml`.

Precedence (highest first): explicit keyword arguments, environment variables, `.env`, `config.yaml`,
defaults. Nested keys use `__` in the environment (`COMPRESSION__THRESHOLD=0.4`) and nesting in YAML
(`compression: {threshold: 0.4}`). Nothing else in the project reads the environment.

Names follow one rule: a setting's environment name is its path in capitals, sections joined to their
keys by `__` (`DATABASE_URL`, `TELEGRAM_BOT_TOKEN` at the top; `COMPRESSION__THRESHOLD`,
`DISCORD__SHARD_COUNT` in a section). Older names are still accepted and named in `Settings.renamed`
(`OLDER_NAMES`, and a section key written with one `_`, such as `DISCORD_SHARD_COUNT`), so the start-up
can say once which name to use instead.

Invalid values raise `ConfigError` with one line naming the key and what is allowed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import yaml
from dotenv import dotenv_values
from pydantic import (
    AnyHttpUrl,
    AnyUrl,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    YamlConfigSettingsSource,
)

DEFAULT_MODEL = "claude-sonnet-5-5"
DEFAULT_SUMMARY_MODEL = "claude-haiku-5-5"
"""Its window (1M) covers any middle the default planned window can hand it; see
`gateway.app.wiring.summary_model_check`."""
DEFAULT_PLANNED_WINDOW = 500_000
"""What compaction plans for on a model whose window is larger (the 5.x models take 1M): chosen by the
cost benchmark (`python -m bench.bench_cost --planned`, BENCHMARKS.md section 12)."""
DEFAULT_DATABASE_URL = "sqlite+aiosqlite:///./gateway.db"
DEFAULT_EFFORT: Literal["medium"] = "medium"
"""`output_config.effort` on the models that take it: a chat people wait on. Against the API's default
on Sonnet 5.5 (high), the effort benchmark (`python -m bench.bench_effort`, BENCHMARKS.md section 15)
measured a third less per chat-day and the first words seconds sooner; Anthropic calls medium the
balanced level and makes it the default of Opus 5.5 and Haiku 5.5. What a lower effort costs in answer
quality no fake can measure."""


OLDER_NAMES = {"MODEL_CONTEXT_LENGTH": "CONTEXT__PLANNED_WINDOW"}
"""Older environment names that still work, and the name to use now (besides `SECTION_KEY` spellings)."""


class ConfigError(Exception):
    """A configuration value is invalid; the message is one line naming the key."""


IdSet = Annotated[frozenset[int], NoDecode]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CompressionSettings(_Section):
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


class AuxiliaryModelSettings(_Section):
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


class AuxiliarySettings(_Section):
    compression: AuxiliaryModelSettings = AuxiliaryModelSettings()


class PromptCachingSettings(_Section):
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


class ContextSettings(_Section):
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


class PinsSettings(_Section):
    max_count: int = Field(20, ge=1, le=200, description="pinned facts one chat may keep")
    max_tokens: int = Field(2_000, ge=50, description="tokens all of a chat's pins may use together")


class AgentSettings(_Section):
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


class EmbeddingsSettings(_Section):
    """Optional semantic ranking for recall (off by default; keyword search works without it)."""

    provider: Literal["off", "voyage", "openai"] = Field(
        "off", description="voyage (Voyage AI) or openai (any /v1/embeddings endpoint)"
    )
    base_url: AnyHttpUrl | None = Field(None, description="API root; default for voyage: its public API")
    api_key: SecretStr | None = None
    model: str | None = Field(None, min_length=1, description="default for voyage: voyage-4-lite")
    dimensions: int | None = Field(None, ge=32, le=4096, description="ask for vectors of this size")
    batch_size: int = Field(64, ge=1, le=128, description="messages per embeddings request")
    timeout_s: float = Field(30.0, gt=0, description="one background embeddings request")
    query_timeout_s: float = Field(3.0, gt=0, description="embedding a recall query (then keywords only)")
    backfill: bool = Field(False, description="also embed messages stored before embeddings were enabled")
    memory_mb: int = Field(256, ge=1, description="vectors kept in memory per process")

    @model_validator(mode="after")
    def _complete(self) -> EmbeddingsSettings:
        if self.provider == "voyage" and self.api_key is None:
            raise ValueError("embeddings.provider voyage needs embeddings.api_key")
        if self.provider == "openai" and (self.base_url is None or self.model is None):
            raise ValueError("embeddings.provider openai needs embeddings.base_url and embeddings.model")
        return self


class TranscriptionSettings(_Section):
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


class LimitsSettings(_Section):
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


class SchedulerSettings(_Section):
    enabled: bool = True
    idle_minutes: float = Field(30, gt=0, description="quiet minutes before idle compaction")
    proactive_share: float = Field(0.60, gt=0.0, lt=1.0)
    cache_aware_share: float = Field(0.35, gt=0.0, lt=1.0)
    archive_retention_days: int = Field(0, ge=0, description="0 keeps archived messages forever")


class MediaSettings(_Section):
    max_file_mb: int = Field(
        20, ge=1, le=2000, description="largest attachment downloaded (Telegram's Bot API allows 20 MB)"
    )
    image_long_edge: int = Field(
        1568, ge=200, le=8000, description="images are downscaled to this long edge before storing"
    )


class ReplySettings(_Section):
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


class ConsoleSettings(_Section):
    log_file: Path | None = Field(
        Path("gateway-chat.log"),
        description="in `chat`, logs go to this file so the conversation stays readable; "
        "`off`: only warnings and errors, on stderr",
    )

    @field_validator("log_file", mode="before")
    @classmethod
    def _off(cls, value: Any) -> Any:
        return None if isinstance(value, str) and value.strip().lower() in {"", "off", "none"} else value


class StreamingSettings(_Section):
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


class ObservabilitySettings(_Section):
    metrics_port: int | None = Field(None, ge=1, le=65535)
    metrics_host: str = "127.0.0.1"


class FleetSettings(_Section):
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


class DiscordSettings(_Section):
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


class Settings(BaseSettings):
    """Everything configurable, validated once at start-up."""

    model_config = SettingsConfigDict(
        env_file=".env",
        env_file_encoding="utf-8",
        env_nested_delimiter="__",
        env_ignore_empty=True,
        case_sensitive=False,
        extra="ignore",
        yaml_file="config.yaml",
        frozen=True,
    )
    _renamed: tuple[tuple[str, str], ...] = PrivateAttr(default=())

    database_url: str = DEFAULT_DATABASE_URL
    database_pool_size: int = Field(10, ge=1, description="Postgres connections kept open per process")
    database_max_overflow: int = Field(20, ge=0, description="extra Postgres connections under a burst")
    anthropic_api_key: SecretStr | None = None
    anthropic_base_url: AnyHttpUrl | None = None
    model: str = Field(DEFAULT_MODEL, min_length=1)
    model_context_length: int | None = Field(
        None, ge=1024, description="older name of context.planned_window (one of them, or both equal)"
    )

    telegram_bot_token: SecretStr | None = None
    telegram_base_url: AnyHttpUrl = AnyHttpUrl("https://api.telegram.org/bot")
    telegram_base_file_url: AnyHttpUrl | None = None
    """File downloads; default: next to `telegram_base_url` (".../bot" -> ".../file/bot")."""
    telegram_webhook_url: AnyHttpUrl | None = None
    telegram_webhook_listen: str = "0.0.0.0"  # noqa: S104 - a webhook must be reachable from outside
    telegram_webhook_port: int = Field(8443, ge=1, le=65535)
    telegram_webhook_secret: SecretStr | None = Field(None, validate_default=True)
    telegram_webhook_max_connections: int = Field(40, ge=1, le=100)
    """Telegram's simultaneous webhook connections to this deployment (its default is 40)."""

    discord_bot_token: SecretStr | None = None
    discord_api_base_url: AnyHttpUrl = AnyHttpUrl("https://discord.com/api/v10")
    discord_gateway_url: AnyUrl | None = None

    telegram_admin_ids: IdSet = frozenset()
    discord_admin_ids: IdSet = frozenset()
    telegram_allowed_users: IdSet = frozenset()
    discord_allowed_users: IdSet = frozenset()
    gateway_allow_all_users: bool = False

    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = "INFO"
    spool_dir: Path = Path("./spool")
    shutdown_timeout_s: float = Field(
        8.0,
        ge=2.0,
        le=600.0,
        description="SIGTERM/SIGINT to exit; keep it below the supervisor's kill timeout",
    )

    compression: CompressionSettings = CompressionSettings()
    auxiliary: AuxiliarySettings = AuxiliarySettings()
    prompt_caching: PromptCachingSettings = PromptCachingSettings()
    context: ContextSettings = ContextSettings()
    pins: PinsSettings = PinsSettings()
    agent: AgentSettings = AgentSettings()
    limits: LimitsSettings = LimitsSettings()
    scheduler: SchedulerSettings = SchedulerSettings()
    media: MediaSettings = MediaSettings()
    streaming: StreamingSettings = StreamingSettings()
    observability: ObservabilitySettings = ObservabilitySettings()
    reply: ReplySettings = ReplySettings()
    console: ConsoleSettings = ConsoleSettings()
    embeddings: EmbeddingsSettings = EmbeddingsSettings()
    transcription: TranscriptionSettings = TranscriptionSettings()
    fleet: FleetSettings = FleetSettings()
    discord: DiscordSettings = DiscordSettings()

    @field_validator("telegram_webhook_secret")
    @classmethod
    def _webhook_needs_secret(cls, value: SecretStr | None, info: ValidationInfo) -> SecretStr | None:
        # Without it anyone who finds the URL can post updates as any user.
        if info.data.get("telegram_webhook_url") is not None and (
            value is None or not value.get_secret_value().strip()
        ):
            raise ValueError("must be set when TELEGRAM_WEBHOOK_URL is set (any 1-256 of A-Z a-z 0-9 _ -)")
        return value

    @field_validator(
        "telegram_admin_ids",
        "discord_admin_ids",
        "telegram_allowed_users",
        "discord_allowed_users",
        mode="before",
    )
    @classmethod
    def _id_list(cls, value: Any) -> Any:
        if isinstance(value, int):
            return frozenset({value})
        if isinstance(value, str):
            parts = [p.strip() for p in value.replace(";", ",").split(",") if p.strip()]
            bad = [p for p in parts if not p.lstrip("-").isdigit()]
            if bad:
                raise ValueError(f"expected comma-separated numeric user ids, got {bad[0]!r}")
            return frozenset(int(p) for p in parts)
        return value

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value

    @field_validator("database_url")
    @classmethod
    def _database_url(cls, value: str) -> str:
        allowed = ("sqlite+aiosqlite://", "postgresql+asyncpg://", "postgresql://", "postgres://")
        if not value.startswith(allowed):
            raise ValueError("must start with sqlite+aiosqlite:// or postgresql+asyncpg://")
        if value.startswith(("postgresql://", "postgres://")):
            value = "postgresql+asyncpg://" + value.split("://", 1)[1]
        return value

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (
            init_settings,
            env_settings,
            dotenv_settings,
            YamlConfigSettingsSource(settings_cls),
            file_secret_settings,
        )

    # Derived values -------------------------------------------------------------------------------

    @property
    def renamed(self) -> tuple[tuple[str, str], ...]:
        """(older name, name to use) for each older environment name this configuration was read with."""
        return self._renamed

    @property
    def planned_window(self) -> int | None:
        """The operator's planned window (`context.planned_window`, or its older name
        `MODEL_CONTEXT_LENGTH`); None: the default for the model. `gateway.app.wiring.main_model` owns
        the decision (and refuses the two names disagreeing)."""
        return self.context.planned_window or self.model_context_length

    @property
    def summary_model(self) -> str:
        return self.auxiliary.compression.model or DEFAULT_SUMMARY_MODEL

    @property
    def is_postgres(self) -> bool:
        return self.database_url.startswith("postgresql")

    def platforms_configured(self) -> list[str]:
        names = []
        if self.telegram_bot_token is not None:
            names.append("telegram")
        if self.discord_bot_token is not None:
            names.append("discord")
        return names


def _describe(error: Any) -> str:
    loc = ".".join(str(p) for p in error.get("loc", ()) if not isinstance(p, int))
    key = loc or "configuration"
    env_key = key.upper().replace(".", "__")
    value = error.get("input")
    shown = "<secret>" if "token" in key or "key" in key or "secret" in key else repr(value)
    msg = error.get("msg", "invalid value")
    if isinstance(shown, str) and len(shown) > 80:
        shown = shown[:77] + "..."
    return f"invalid configuration: {key} ({env_key}) = {shown}: {msg}"


def _section_keys() -> dict[str, tuple[str, str]]:
    """`SECTION_KEY` (one underscore) -> (section, key) for every key of a section, where that spelling
    names no top-level setting."""
    found: dict[str, tuple[str, str]] = {}
    for section, field in Settings.model_fields.items():
        kind = field.annotation
        if isinstance(kind, type) and issubclass(kind, _Section):
            for key in kind.model_fields:
                if f"{section}_{key}" not in Settings.model_fields:
                    found[f"{section}_{key}".upper()] = (section, key)
    return found


def older_names(names: Mapping[str, str]) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """From environment `names` (name -> value): the section values set under a one-underscore name
    (as nested overrides; a value under the `SECTION__KEY` name wins), and each (older, newer) name."""
    given = {name.upper(): value for name, value in names.items()}
    keys = _section_keys()
    values: dict[str, Any] = {}
    renamed = [(name, OLDER_NAMES[name]) for name in sorted(given) if name in OLDER_NAMES]
    for name in sorted(given):
        if name not in keys:
            continue
        section, key = keys[name]
        newer = f"{section}__{key}".upper()
        renamed.append((name, newer))
        if newer not in given:
            values.setdefault(section, {})[key] = given[name]
    return values, renamed


def _environment_names(env_file: Path) -> dict[str, str]:
    """The process environment over `.env`: what the settings are read from."""
    found = {k: v for k, v in dotenv_values(env_file).items() if v} if env_file.is_file() else {}
    found.update({k: v for k, v in os.environ.items() if v})  # noqa: TID251 - the one reader of settings
    return found


def _merged(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merged(merged[key], value)  # an explicit override wins over an older name
        elif key not in merged:
            merged[key] = value
    return merged


def load_settings(*, yaml_path: Path | None = None, **overrides: Any) -> Settings:
    """Build and validate settings; raise `ConfigError` with one clear line on the first invalid key."""
    try:
        older, renamed = older_names(_environment_names(Path(".env")))
        overrides = _merged(overrides, older)
        if yaml_path is not None:
            if not yaml_path.is_file():
                raise ConfigError(f"invalid configuration: config file {yaml_path} does not exist")
            settings = _settings_with_yaml(yaml_path, overrides)
        else:
            settings = Settings(**overrides)
        settings._renamed = tuple(renamed)
        return settings
    except ValidationError as exc:
        raise ConfigError(_describe(exc.errors()[0])) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"invalid configuration: config.yaml is not valid YAML: {exc}") from None
    except ValueError as exc:  # e.g. a malformed JSON value for a nested key in the environment
        raise ConfigError(f"invalid configuration: {exc}") from None


def _settings_with_yaml(yaml_path: Path, overrides: dict[str, Any]) -> Settings:
    class _Custom(Settings):
        model_config = SettingsConfigDict(**{**Settings.model_config, "yaml_file": str(yaml_path)})

    return _Custom(**overrides)
