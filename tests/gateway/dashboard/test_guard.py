"""The guard's decisions over headers alone: hosts, origins, trusted proxies, sessions, login limits."""

from __future__ import annotations

import pytest

from gateway.config import ConfigError, load_settings
from gateway.config.dashboard import DashboardSettings
from gateway.dashboard.guard import LOGIN_ATTEMPTS, LOGIN_WINDOW_S, Guard, Seen


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def guard(host: str = "127.0.0.1", *, proxies: tuple[str, ...] = (), clock: Clock | None = None) -> Guard:
    return Guard(
        password="pw",
        bind_host=host,
        port=8080,
        session_s=3600,
        trusted_proxies=proxies,
        clock=clock or Clock(),
    )


def seen(peer: str = "127.0.0.1", method: str = "GET", tls: bool = False, **headers: str) -> Seen:
    return Seen(
        method=method, peer=peer, headers={k.replace("_", "-"): v for k, v in headers.items()}, tls=tls
    )


@pytest.mark.parametrize(
    ("host", "ok"),
    [
        ("127.0.0.1:8080", True),
        ("localhost:8080", True),
        ("[::1]:8080", True),
        ("127.0.0.1:9090", False),
        ("attacker.example:8080", False),  # a rebound name pointing at 127.0.0.1
        ("", False),
    ],
)
def test_loopback_host_names_only(host: str, ok: bool) -> None:
    g = guard()
    assert g.host_allowed(g.origin(seen(Host=host) if host else seen())) is ok


def test_a_bound_address_must_be_named() -> None:
    g = guard("10.0.0.5")
    assert g.host_allowed(g.origin(seen(peer="10.0.0.9", Host="10.0.0.5:8080")))
    assert not g.host_allowed(g.origin(seen(peer="10.0.0.9", Host="other.example:8080")))


def test_allowed_hosts_narrow_a_wildcard_bind_and_a_proxy_to_their_names() -> None:
    names = DashboardSettings(
        port=8080, host="0.0.0.0", password="pw", allowed_hosts="Board.Example.org, 10.0.0.5"
    ).allowed_hosts
    assert names == ("board.example.org", "10.0.0.5")
    open_ = guard("0.0.0.0")
    assert open_.host_allowed(open_.origin(seen(peer="10.0.0.9", Host="rebound.attacker:8080")))
    g = Guard(password="pw", bind_host="0.0.0.0", port=8080, session_s=60, allowed_hosts=names)
    assert g.host_allowed(g.origin(seen(peer="10.0.0.9", Host="board.example.org:8080")))
    assert g.host_allowed(g.origin(seen(peer="10.0.0.9", Host="10.0.0.5:8080")))
    assert not g.host_allowed(g.origin(seen(peer="10.0.0.9", Host="rebound.attacker:8080")))
    proxied = Guard(
        password="pw",
        bind_host="127.0.0.1",
        port=8080,
        session_s=60,
        trusted_proxies=("127.0.0.1",),
        allowed_hosts=names,
    )
    via = {"Host": "127.0.0.1:8080", "X_Forwarded_Proto": "https"}
    assert proxied.host_allowed(proxied.origin(seen(**via, X_Forwarded_Host="board.example.org")))
    assert not proxied.host_allowed(proxied.origin(seen(**via, X_Forwarded_Host="evil.example")))
    with pytest.raises(ValueError, match="without a port"):
        DashboardSettings(port=8080, allowed_hosts="board.example.org:443")


def test_forwarded_headers_count_only_from_a_trusted_proxy() -> None:
    g = guard(proxies=("10.1.0.0/16",))
    direct = g.origin(
        seen(peer="203.0.113.7", Host="127.0.0.1:8080", X_Forwarded_For="1.2.3.4", X_Forwarded_Proto="https")
    )
    assert direct.client == "203.0.113.7"
    assert direct.scheme == "http"
    assert not direct.proxied
    proxied = g.origin(
        seen(
            peer="10.1.2.3",
            Host="127.0.0.1:8080",
            X_Forwarded_For="6.6.6.6, 198.51.100.4",
            X_Forwarded_Proto="https",
            X_Forwarded_Host="dash.example.org",
        )
    )
    assert proxied.client == "198.51.100.4", "the nearest untrusted hop, not what the client claims"
    assert proxied.own == "https://dash.example.org"
    assert g.host_allowed(proxied)


def test_same_origin_needs_the_exact_origin() -> None:
    g = guard()
    origin = g.origin(seen(Host="127.0.0.1:8080"))
    assert g.same_origin(seen(Host="127.0.0.1:8080", Origin="http://127.0.0.1:8080"), origin)
    assert not g.same_origin(seen(Host="127.0.0.1:8080", Origin="http://evil.example"), origin)
    assert not g.same_origin(seen(Host="127.0.0.1:8080", Origin="null"), origin)
    assert not g.same_origin(seen(Host="127.0.0.1:8080"), origin)
    assert g.same_origin(seen(Host="127.0.0.1:8080", Referer="http://127.0.0.1:8080/chats/1"), origin)


def test_sessions_expire_and_csrf_tokens_are_per_session() -> None:
    clock = Clock()
    g = guard(clock=clock)
    key, session = g.open_session()
    other_key, other = g.open_session()
    assert g.session(key) is session
    assert g.csrf_ok(session, session.csrf)
    assert not g.csrf_ok(session, other.csrf)
    assert not g.csrf_ok(session, None)
    clock.t += 3601
    assert g.session(key) is None
    assert g.session(other_key) is None
    assert g.session("made-up") is None


def test_failed_logins_block_a_client_for_a_while() -> None:
    clock = Clock()
    g = guard(clock=clock)
    for _ in range(LOGIN_ATTEMPTS):
        assert not g.login_blocked("1.1.1.1")
        assert not g.check_password("1.1.1.1", "guess")
    assert g.login_blocked("1.1.1.1")
    assert not g.login_blocked("2.2.2.2"), "per client"
    clock.t += LOGIN_WINDOW_S + 1
    assert not g.login_blocked("1.1.1.1")
    assert g.check_password("1.1.1.1", "pw")


def test_a_public_host_without_a_password_is_refused_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DASHBOARD__PORT", "8080")
    monkeypatch.setenv("DASHBOARD__HOST", "0.0.0.0")
    with pytest.raises(ConfigError) as refused:
        load_settings()
    line = str(refused.value)
    assert "DASHBOARD__PASSWORD" in line
    assert "\n" not in line
    monkeypatch.setenv("DASHBOARD__PASSWORD", "a long enough secret")
    assert load_settings().dashboard.password is not None


def test_loopback_without_a_password_is_allowed_and_proxies_must_be_addresses() -> None:
    assert DashboardSettings(port=8080).password is None
    assert DashboardSettings(port=8080, trusted_proxies="10.0.0.1, 10.2.0.0/16").trusted_proxies == (
        "10.0.0.1",
        "10.2.0.0/16",
    )
    with pytest.raises(ValueError, match="IP addresses"):
        DashboardSettings(port=8080, trusted_proxies="proxy.example")
