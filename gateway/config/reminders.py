"""The `reminders` section: scheduled messages and tasks (`schedule_message`, `/reminders`, `/timezone`)."""

from __future__ import annotations

from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, field_validator


class RemindersSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = True
    default_timezone: str = Field("UTC", description="a chat's zone until /timezone sets one (IANA name)")
    tick_s: float = Field(1.0, ge=0.2, le=60, description="how often due reminders are looked for")
    late_window_h: float = Field(
        24, ge=0, description="a reminder that fell due while the bot was down is sent late within this"
    )
    max_active: int = Field(50, ge=1, description="pending reminders per chat at most")
    min_repeat_minutes: float = Field(60, ge=1, description="shortest interval of a repeating reminder")

    @field_validator("default_timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"unknown time zone {value!r} (use an IANA name such as Europe/Berlin)") from exc
        return value
