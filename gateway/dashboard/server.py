"""The dashboard's web server (aiohttp): the guard on every request, the routes, the templates.

Every response carries a strict Content-Security-Policy (`default-src 'self'`, no inline script),
`X-Frame-Options: DENY`, `no-store` caching and no referrer to other sites. Pages need a session
(after `/login`, or handed out on loopback without a password); a POST needs the page's own Origin and
the session's CSRF token, else 403 and nothing changes.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import jinja2
from aiohttp import web

from gateway.commands.admin import AdminHandlers
from gateway.config import DashboardSettings
from gateway.dashboard.actions import Actions
from gateway.dashboard.guard import COOKIE, Guard, Origin, Seen, Session
from gateway.dashboard.pages import Figures, Page, Pages
from gateway.http_site import LocalSite
from gateway.spending.budget import Budget
from gateway.store import Store
from gateway.store.dashboard import DashboardAudit, DashboardReads

logger = logging.getLogger(__name__)

HERE = Path(__file__).parent
HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
        "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",  # no-referrer would make browsers send `Origin: null`
    "Cache-Control": "no-store",
}
OPEN_PATHS = ("/login", "/static/")
ORIGIN_KEY = web.RequestKey("origin", Origin)
SESSION_KEY = web.RequestKey("session", Session)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def templates() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )


def _seen(request: web.Request) -> Seen:
    return Seen(
        method=request.method,
        peer=request.remote or "",
        headers=request.headers,
        tls=request.secure,
    )


class Dashboard:
    """The application: built once by `DashboardServer` (or a test) from the guard, pages and actions."""

    def __init__(self, guard: Guard, pages: Pages, actions: Actions) -> None:
        self.guard = guard
        self.pages = pages
        self.actions = actions
        self.env = templates()

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._headers, self._guard])
        app.router.add_get("/login", self._login_form)
        app.router.add_post("/login", self._login)
        app.router.add_post("/logout", self._logout)
        app.router.add_get("/", self._page(self.pages.overview))
        app.router.add_get("/chats", self._page(self.pages.chats))
        app.router.add_get("/chats/{chat_pk}", self._page(self.pages.chat))
        app.router.add_post("/chats/{chat_pk}/compact", self._compact)
        app.router.add_post("/chats/{chat_pk}/undo", self._undo)
        app.router.add_static("/static/", HERE / "static", follow_symlinks=False, show_index=False)
        return app

    def _page(self, build: Callable[[web.Request], Awaitable[Page]]) -> Handler:
        async def handle(request: web.Request) -> web.StreamResponse:
            page = await build(request)
            return self.render(request, page.template, page.context)

        return handle

    def render(self, request: web.Request, name: str, context: dict[str, Any]) -> web.Response:
        session = request.get(SESSION_KEY)
        body = self.env.get_template(name).render(
            csrf=session.csrf if session else "",
            logged_in=session is not None and not self.guard.open_without_login,
            open_without_login=self.guard.open_without_login,
            **context,
        )
        return web.Response(text=body, content_type="text/html", charset="utf-8")

    # -- middleware -------------------------------------------------------------------------------

    @web.middleware
    async def _headers(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            response = await handler(request)
        except web.HTTPException as exc:
            exc.headers.update(HEADERS)
            raise
        response.headers.update(HEADERS)
        return response

    @web.middleware
    async def _guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        seen = _seen(request)
        origin = self.guard.origin(seen)
        if not self.guard.host_allowed(origin):
            raise web.HTTPMisdirectedRequest(text="this dashboard is not served under that host name")
        request[ORIGIN_KEY] = origin
        if request.method not in ("GET", "HEAD") and not self.guard.same_origin(seen, origin):
            raise web.HTTPForbidden(text="refused: the request did not come from this dashboard's pages")
        if request.path.startswith(OPEN_PATHS):
            return await handler(request)
        cookie = request.cookies.get(COOKIE)
        session = self.guard.session(cookie)
        fresh: str | None = None
        if session is None and self.guard.open_without_login:
            fresh, session = self.guard.open_session()
        if session is None:
            if request.method in ("GET", "HEAD"):
                raise web.HTTPSeeOther("/login")
            raise web.HTTPForbidden(text="log in first")
        if request.method == "POST":
            form = await request.post()
            sent = form.get("csrf")
            if not self.guard.csrf_ok(session, sent if isinstance(sent, str) else None):
                raise web.HTTPForbidden(text="refused: the form's token is missing or out of date")
        request[SESSION_KEY] = session
        response = await handler(request)
        if fresh is not None:
            self._set_cookie(response, fresh, origin)
        return response

    def _set_cookie(self, response: web.StreamResponse, key: str, origin: Origin) -> None:
        response.set_cookie(
            COOKIE,
            key,
            httponly=True,
            samesite="Strict",
            secure=origin.scheme == "https",
            path="/",
            max_age=int(self.guard.session_s),
        )

    # -- login ------------------------------------------------------------------------------------

    async def _login_form(self, request: web.Request) -> web.StreamResponse:
        if self.guard.open_without_login or self.guard.session(request.cookies.get(COOKIE)):
            raise web.HTTPSeeOther("/")
        return self.render(request, "login.html", {"error": None})

    async def _login(self, request: web.Request) -> web.StreamResponse:
        origin: Origin = request[ORIGIN_KEY]
        if self.guard.login_blocked(origin.client):
            logger.warning("dashboard: too many failed logins from %s", origin.client)
            response = self.render(
                request, "login.html", {"error": "Too many failed attempts; wait a few minutes."}
            )
            response.set_status(429)
            return response
        form = await request.post()
        given = form.get("password")
        if not isinstance(given, str) or not self.guard.check_password(origin.client, given):
            logger.warning("dashboard: failed login from %s", origin.client)
            response = self.render(request, "login.html", {"error": "Wrong password."})
            response.set_status(401)
            return response
        self.guard.close_session(request.cookies.get(COOKIE))
        key, _ = self.guard.open_session()
        response = _see_other("/")
        self._set_cookie(response, key, origin)
        logger.info("dashboard: login from %s", origin.client)
        return response

    async def _logout(self, request: web.Request) -> web.StreamResponse:
        self.guard.close_session(request.cookies.get(COOKIE))
        response = _see_other("/login")
        response.del_cookie(COOKIE, path="/")
        return response

    # -- actions ----------------------------------------------------------------------------------

    async def _compact(self, request: web.Request) -> web.StreamResponse:
        chat_pk = await self._existing_chat(request)
        origin: Origin = request[ORIGIN_KEY]
        await self.actions.compact(chat_pk, client=origin.client)
        raise web.HTTPSeeOther(f"/chats/{chat_pk}#actions")

    async def _undo(self, request: web.Request) -> web.StreamResponse:
        chat_pk = await self._existing_chat(request)
        origin: Origin = request[ORIGIN_KEY]
        await self.actions.undo(chat_pk, client=origin.client)
        raise web.HTTPSeeOther(f"/chats/{chat_pk}#actions")

    async def _existing_chat(self, request: web.Request) -> int:
        raw = request.match_info["chat_pk"]
        if not raw.isdigit() or await self.pages.reads.chat(int(raw)) is None:
            raise web.HTTPNotFound(text="no such chat")
        return int(raw)


def _see_other(location: str) -> web.Response:
    """A redirect returned (to set a cookie on it) rather than raised."""
    return web.Response(status=303, headers={"Location": location})


class DashboardServer:
    """Serves a `Dashboard` on the configured host and port, started and stopped with the gateway."""

    def __init__(self, dashboard: Dashboard, *, host: str, port: int) -> None:
        self._dashboard = dashboard
        self._site = LocalSite(host, port)

    async def start(self) -> None:
        await self._site.serve(self._dashboard.app())
        host = self._site.host
        logger.info("dashboard on http://%s:%d", host, self.port)
        if self._dashboard.guard.open_without_login:
            logger.warning(
                "dashboard: no DASHBOARD__PASSWORD; anyone who can reach %s:%d sees it (loopback only: "
                "use an SSH tunnel)",
                host,
                self.port,
            )

    @property
    def port(self) -> int:
        return self._site.port

    async def stop(self) -> None:
        await self._site.stop()


def build_dashboard(
    settings: DashboardSettings,
    *,
    store: Store,
    admin: AdminHandlers,
    budget: Budget | None,
    timezone: str,
    clock: Callable[[], datetime],
    reminder_timezone: str = "UTC",
    worker: str = "",
) -> Dashboard:
    """The dashboard of a running gateway: its store, its `/compact` code, its budget and clock."""
    if settings.port is None:
        raise ValueError("the dashboard needs DASHBOARD__PORT")
    guard = Guard(
        password=settings.password.get_secret_value() if settings.password else None,
        bind_host=settings.host,
        port=settings.port,
        session_s=settings.session_hours * 3600,
        trusted_proxies=settings.trusted_proxies,
        allowed_hosts=settings.allowed_hosts,
    )
    audit = DashboardAudit(store.engine, clock=clock)
    pages = Pages(
        reads=DashboardReads(store.engine, clock=clock),
        audit=audit,
        pins=store.pins,
        figures=Figures(
            context_size=admin.context_size,
            breakdown=admin.window_breakdown,
            compressor_threshold=admin.compressor_threshold,
            hygiene_threshold=admin.hygiene_threshold,
            timezone=timezone,
        ),
        budget=budget,
        clock=clock,
        reminders=store,
        reminder_timezone=reminder_timezone,
        worker=worker,
    )
    return Dashboard(guard, pages, Actions(admin, audit))
