"""The admin dashboard's settings (`DASHBOARD__*`): off unless a port is given, loopback by default."""

from __future__ import annotations

import ipaddress
from typing import Annotated, Any

from pydantic import Field, SecretStr, ValidationInfo, field_validator
from pydantic_settings import NoDecode

from gateway.config.sections import Section

ProxyList = Annotated[tuple[str, ...], NoDecode]


def is_loopback(host: str) -> bool:
    """Whether `host` only listens on this machine (127.0.0.0/8, ::1, `localhost`)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


class DashboardSettings(Section):
    """Served by `gateway run` when `port` is set. A host other than loopback needs a password; on
    loopback without one the pages are open to whoever reaches the port (an SSH tunnel), said at start."""

    port: int | None = Field(None, ge=1, le=65535)
    host: str = Field("127.0.0.1", min_length=1)
    password: SecretStr | None = Field(None, validate_default=True)
    trusted_proxies: ProxyList = Field(
        (), description="addresses (or networks) of reverse proxies whose X-Forwarded-* headers count"
    )
    allowed_hosts: ProxyList = Field(
        (), description="host names a request may name (the Host header, or X-Forwarded-Host via a proxy)"
    )
    session_hours: float = Field(12.0, gt=0.0, le=24.0 * 30)

    @field_validator("password")
    @classmethod
    def _password_off_loopback(cls, value: SecretStr | None, info: ValidationInfo) -> SecretStr | None:
        if value is not None and not value.get_secret_value().strip():
            value = None
        host = str(info.data.get("host", "127.0.0.1"))
        if info.data.get("port") is not None and value is None and not is_loopback(host):
            raise ValueError(f"must be set when DASHBOARD__HOST ({host}) is not a loopback address")
        return value

    @field_validator("allowed_hosts", mode="before")
    @classmethod
    def _host_list(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = value.replace(";", ",").split(",")
        names = tuple(str(h).strip().strip("[]").lower() for h in value if str(h).strip())
        for name in names:
            if ":" in name and not _is_ip(name):
                raise ValueError(f"expected host names without a port, got {name!r}")
        return names

    @field_validator("trusted_proxies", mode="before")
    @classmethod
    def _proxy_list(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = [p.strip() for p in value.replace(";", ",").split(",") if p.strip()]
        for item in value:
            try:
                ipaddress.ip_network(str(item), strict=False)
            except ValueError:
                raise ValueError(f"expected IP addresses or networks, got {item!r}") from None
        return tuple(str(item) for item in value)
