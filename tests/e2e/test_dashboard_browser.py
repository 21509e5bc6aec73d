"""The admin dashboard in a real headless Chromium (selenium + Debian's chromium-driver), served by the
real gateway process on SQLite and Postgres: what an outsider sees, login, the chats and a chat's page
(chart, compaction and its summary), markup that stays text, a cross-origin form refused, and the start
refused on a public address without a password."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from tests.e2e.conftest import TelegramWorld, WorldFactory
from tests.e2e.harness import GatewayProcess, base_env
from tests.support.ports import free_port

pytestmark = pytest.mark.e2e

CHROMEDRIVER = "/usr/bin/chromedriver"
PASSWORD = "dashboard test password"
ALICE = 42
GROUP = -100777
GROUP_TITLE = "<i>Release</i> crew"
XSS = "<img src=x onerror=alert(1)>"


def _filler(tag: str) -> str:
    return (f"{tag} talks about release planning and the staging database; " * 12).strip()


@contextmanager
def chrome() -> Iterator[Any]:
    if shutil.which("chromedriver") is None and not Path(CHROMEDRIVER).exists():
        pytest.skip("chromium-driver is not installed: run `make browser`")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,1000"):
        options.add_argument(flag)
    options.binary_location = "/usr/bin/chromium"
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


async def _say(world: TelegramWorld, chat: int, text: str, n: int, **kwargs: Any) -> None:
    world.tg.push_message(chat, text, user_id=ALICE, first_name="Alice", **kwargs)
    await world.wait_replies(chat, n, timeout=30)


async def _evil_site(target: str) -> web.AppRunner:
    """Another origin with a form that posts to the dashboard as soon as it loads."""
    page = (
        "<!doctype html><form id=f method=post action='" + target + "'>"
        "<input type=hidden name=csrf value=guess></form>"
        "<script>document.getElementById('f').submit()</script>"
    )

    async def serve(_: web.Request) -> web.Response:
        return web.Response(text=page, content_type="text/html")

    app = web.Application()
    app.router.add_get("/", serve)
    runner = web.AppRunner(app)
    await runner.setup()
    return runner


def _browse(base: str, evil: str) -> None:
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    with chrome() as driver:
        wait = WebDriverWait(driver, 20)

        # An outsider: every page sends to the login, which shows no chat content.
        for path in ("/", "/chats", "/chats/1"):
            driver.get(base + path)
            assert driver.current_url.endswith("/login"), driver.current_url
            assert "Alice" not in driver.page_source
            assert "release planning" not in driver.page_source

        # A wrong password fails; the right one logs in.
        driver.find_element(By.NAME, "password").send_keys("not the password")
        driver.find_element(By.NAME, "login").click()
        assert "Wrong password" in wait.until(ec.presence_of_element_located((By.ID, "login-error"))).text
        driver.find_element(By.NAME, "password").send_keys(PASSWORD)
        driver.find_element(By.NAME, "login").click()
        wait.until(ec.url_to_be(base + "/"))
        assert "Spend" in driver.page_source

        # Both chats, each with its context fill.
        driver.get(base + "/chats")
        rows = driver.find_elements(By.CSS_SELECTOR, "tr.chat")
        names = [r.find_element(By.TAG_NAME, "a").text for r in rows]
        assert GROUP_TITLE in names, names  # the title's markup is text
        assert "Alice" in names, names
        for row in rows:
            assert row.find_element(By.CSS_SELECTOR, "td.fill").text.endswith("%")
        assert not driver.find_elements(By.CSS_SELECTOR, "#chats i")

        # Alice's chat: the chart is drawn, the compaction shows its summary, markup stays text.
        driver.find_element(By.LINK_TEXT, "Alice").click()
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "#chart canvas")))
        compaction = driver.find_element(By.CSS_SELECTOR, "#compactions article.compaction")
        assert "manual" in compaction.text
        assert "→" in compaction.text
        assert compaction.find_element(By.CSS_SELECTOR, "pre.summary").text.strip()
        messages = driver.find_element(By.ID, "messages")
        assert XSS in messages.text
        assert not driver.find_elements(By.CSS_SELECTOR, "#messages img")
        try:
            driver.switch_to.alert  # noqa: B018 - raises when no alert is open
            raise AssertionError("a message's markup ran as script")
        except NoAlertPresentException:
            pass
        chat_url = driver.current_url
        audit_before = driver.find_element(By.ID, "audit").text

        # A form on another origin posting to the dashboard is refused and changes nothing.
        driver.get(evil)
        wait.until(lambda d: "refused" in d.page_source)
        driver.get(chat_url)
        assert driver.find_element(By.ID, "audit").text == audit_before
        assert len(driver.find_elements(By.CSS_SELECTOR, "#compactions article.compaction")) == 1


async def test_dashboard_in_a_browser(telegram_world: WorldFactory) -> None:
    port = free_port()
    async with telegram_world(
        context_window=6000,
        TELEGRAM_ALLOWED_USERS=str(ALICE),
        TELEGRAM_ADMIN_IDS=str(ALICE),
        AGENT__MAX_OUTPUT_TOKENS="512",
        COMPRESSION__PROTECT_LAST_N="1",
        COMPRESSION__ENABLED="false",
        DASHBOARD__PORT=str(port),
        DASHBOARD__PASSWORD=PASSWORD,
    ) as world:
        await world.gw.wait_log(rf"dashboard on http://127\.0\.0\.1:{port}")
        replies = 0
        for i in range(4):
            replies += 1
            await _say(world, ALICE, _filler(f"part-{i}"), replies)
        replies += 1
        await _say(world, ALICE, XSS, replies)
        replies += 1
        await _say(world, ALICE, "/compact", replies)
        assert world.sent_to(ALICE)[-1].visible_text.startswith("Compaction ok")
        await _say(world, GROUP, "@gateway_test_bot hello", 1, chat_type="supergroup", chat_title=GROUP_TITLE)

        evil_port = free_port()
        runner = await _evil_site(f"http://127.0.0.1:{port}/chats/1/compact")
        site = web.TCPSite(runner, "127.0.0.1", evil_port)
        await site.start()
        try:
            await asyncio.to_thread(_browse, f"http://127.0.0.1:{port}", f"http://127.0.0.1:{evil_port}/")
        finally:
            await runner.cleanup()
        world.gw.assert_no_secret(PASSWORD)


async def test_a_public_address_without_a_password_stops_the_start(tmp_path: Path, db_url: str) -> None:
    env = base_env(
        database_url=db_url,
        anthropic_url="http://127.0.0.1:9",
        tmp=tmp_path,
        TELEGRAM_BOT_TOKEN="123456:TEST-token-abcdefghijklmnopqrstuvwxyz",
        DASHBOARD__PORT=str(free_port()),
        DASHBOARD__HOST="0.0.0.0",
    )
    gw = GatewayProcess(env, cwd=tmp_path)
    await gw.start(ready=None)
    assert gw.proc is not None
    code = await asyncio.wait_for(gw.proc.wait(), timeout=30)
    await gw.stop()
    assert code == 2
    lines = [line for line in gw.logs if line.strip()]
    assert len(lines) == 1, lines
    assert "DASHBOARD__PASSWORD" in lines[0]
