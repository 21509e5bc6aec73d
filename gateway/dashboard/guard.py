"""Who may use the dashboard: the password and sessions, the CSRF token, the Host and Origin checks,
trusted proxies and the login rate limit. Pure decisions over a request's headers; no I/O.

- **Password.** One shared password (`DASHBOARD__PASSWORD`), compared in constant time. A login makes a
  random session id kept in this process (a restart logs everyone out); its cookie is HttpOnly,
  SameSite=Strict, and Secure when the request came over TLS (directly or through a trusted proxy).
  Without a password (loopback only, refused elsewhere at start-up) a session is handed out without a
  login, so the CSRF token works the same way.
- **Host.** Bound to loopback, a request must name a loopback host with the dashboard's port (a web page
  that rebinds its own name to 127.0.0.1 is refused). Bound to one address, that address or any name
  resolving to it through a trusted proxy; bound to every address (`0.0.0.0`), any Host, since the
  password is then required. With `DASHBOARD__ALLOWED_HOSTS` set, only those names, however it is bound
  or reached (a name someone else points at the server is refused).
- **Origin.** Every POST must carry an Origin (or, failing that, a Referer) equal to the page's own
  origin, and every POST but the login the session's CSRF token.
- **Proxies.** `X-Forwarded-For`, `-Proto` and `-Host` count only from an address in
  `DASHBOARD__TRUSTED_PROXIES`; nothing else in a URL or header decides where a page connects.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from gateway.config.dashboard import is_loopback

COOKIE = "gateway_dashboard"
LOGIN_ATTEMPTS = 5
"""Failed logins a client may make per `LOGIN_WINDOW_S`; more are refused without checking."""
LOGIN_WINDOW_S = 300.0
WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", ""})  # noqa: S104 - names compared, nothing bound here

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True, slots=True)
class Seen:
    """What the guard needs of one request, read once from aiohttp's."""

    method: str
    peer: str
    """The address the connection came from."""
    headers: Mapping[str, str]
    tls: bool


@dataclass(frozen=True, slots=True)
class Origin:
    """Where the request came from and what it addressed, after trusted proxies."""

    client: str
    host: str
    scheme: str
    proxied: bool

    @property
    def own(self) -> str:
        return f"{self.scheme}://{self.host}"


@dataclass(slots=True)
class Session:
    csrf: str
    expires: float


@dataclass
class Guard:
    password: str | None
    bind_host: str
    port: int
    session_s: float
    trusted_proxies: tuple[str, ...] = ()
    allowed_hosts: tuple[str, ...] = ()
    """Lower-case host names without a port; empty: the rules by bind address alone."""
    clock: Callable[[], float] = time.monotonic
    _sessions: dict[str, Session] = field(default_factory=dict)
    _failures: dict[str, deque[float]] = field(default_factory=dict)
    _networks: list[Network] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._networks = [ipaddress.ip_network(p, strict=False) for p in self.trusted_proxies]

    @property
    def open_without_login(self) -> bool:
        return self.password is None

    # -- where a request comes from --------------------------------------------------------------

    def _trusted(self, address: str) -> bool:
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return False
        return any(ip in net for net in self._networks)

    def origin(self, seen: Seen) -> Origin:
        host = seen.headers.get("Host", "")
        if not self._trusted(seen.peer):
            return Origin(seen.peer, host, "https" if seen.tls else "http", proxied=False)
        client = seen.peer
        hops = [h.strip() for h in seen.headers.get("X-Forwarded-For", "").split(",") if h.strip()]
        for hop in reversed(hops):  # the nearest hop not one of ours is the client
            client = hop
            if not self._trusted(hop):
                break
        proto = seen.headers.get("X-Forwarded-Proto", "").split(",")[0].strip().lower()
        scheme = proto if proto in ("http", "https") else ("https" if seen.tls else "http")
        forwarded_host = seen.headers.get("X-Forwarded-Host", "").split(",")[0].strip()
        return Origin(client, forwarded_host or host, scheme, proxied=True)

    def host_allowed(self, origin: Origin) -> bool:
        """The request names this dashboard (see the module docstring)."""
        if not origin.host:
            return False
        if self.allowed_hosts:
            name, _ = _split_host(origin.host)
            return name.lower() in self.allowed_hosts
        if origin.proxied or self.bind_host in WILDCARD_HOSTS:
            return True
        name, port = _split_host(origin.host)
        if port is None:
            port = 443 if origin.scheme == "https" else 80
        if port != self.port:
            return False
        if is_loopback(self.bind_host):
            return is_loopback(name)
        return name.lower() == self.bind_host.strip("[]").lower()

    def same_origin(self, seen: Seen, origin: Origin) -> bool:
        """A POST came from one of the dashboard's own pages."""
        sent = seen.headers.get("Origin")
        if sent is None or sent == "null":
            referer = seen.headers.get("Referer")
            if not referer:
                return False
            parts = urlsplit(referer)
            sent = f"{parts.scheme}://{parts.netloc}"
        return hmac.compare_digest(sent.encode(), origin.own.encode())

    # -- sessions ----------------------------------------------------------------------------------

    def session(self, cookie: str | None) -> Session | None:
        if not cookie:
            return None
        found = self._sessions.get(cookie)
        if found is None:
            return None
        if found.expires <= self.clock():
            del self._sessions[cookie]
            return None
        return found

    def open_session(self) -> tuple[str, Session]:
        now = self.clock()
        for key in [k for k, s in self._sessions.items() if s.expires <= now]:
            del self._sessions[key]
        key = secrets.token_urlsafe(32)
        made = Session(csrf=secrets.token_urlsafe(32), expires=now + self.session_s)
        self._sessions[key] = made
        return key, made

    def close_session(self, cookie: str | None) -> None:
        if cookie:
            self._sessions.pop(cookie, None)

    @staticmethod
    def csrf_ok(session: Session, sent: str | None) -> bool:
        return sent is not None and hmac.compare_digest(session.csrf.encode(), sent.encode())

    # -- login -------------------------------------------------------------------------------------

    def login_blocked(self, client: str) -> bool:
        """The client used up its failed logins for now (checked before the password is)."""
        return len(self._recent_failures(client)) >= LOGIN_ATTEMPTS

    def check_password(self, client: str, given: str) -> bool:
        if self.password is None:
            return True
        ok = hmac.compare_digest(given.encode("utf-8"), self.password.encode("utf-8"))
        if not ok:
            self._recent_failures(client).append(self.clock())
        return ok

    def _recent_failures(self, client: str) -> deque[float]:
        failures = self._failures.setdefault(client, deque())
        cutoff = self.clock() - LOGIN_WINDOW_S
        while failures and failures[0] <= cutoff:
            failures.popleft()
        if len(self._failures) > 10_000:  # forget idle clients rather than grow without bound
            for key in [k for k, v in self._failures.items() if not v and k != client]:
                del self._failures[key]
        return failures


def _split_host(host: str) -> tuple[str, int | None]:
    """`name:port` / `[::1]:port` / `name` -> (name, port or None)."""
    if host.startswith("["):
        name, _, rest = host[1:].partition("]")
        port = rest.removeprefix(":")
    elif host.count(":") == 1:
        name, _, port = host.partition(":")
    else:
        name, port = host, ""
    return name, int(port) if port.isdigit() else None
