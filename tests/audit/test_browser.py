"""The browser in a real browser: headless Chromium (Debian's package) driven by Playwright, against
``reconstruct browse``'s application served on a free loopback port. Screenshots of the main pages go
to .test-artifacts/browse/ for a reviewer. Skips with a reason where Chromium or Playwright is absent."""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path

import pytest

from audit.browse.app import create_app
from tests.audit.conftest import CHAT, IRC_KEY, KEY
from tests.flows.conftest import free_port

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARTIFACTS = Path(__file__).resolve().parents[2] / ".test-artifacts" / "browse"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH (apt-get install -y chromium)")


@pytest.fixture(scope="module")
def served(audited):
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(audited), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            pytest.fail("the browse server did not start")
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


@pytest.fixture(scope="module")
def page(served):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        tab = browser.new_page(viewport={"width": 1280, "height": 900})
        tab.set_default_timeout(20_000)
        yield tab
        browser.close()


def _shot(page, name: str) -> None:
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def test_an_auditor_follows_a_finding(page, served):
    page.goto(f"{served}/sessions")
    assert page.locator("#total").inner_text() == "2"
    _shot(page, "1-sessions")

    page.fill("input[name=q]", "deploy")  # search
    page.click("#apply")
    page.wait_for_url("**/sessions?q=deploy*")
    assert page.locator("a.session-link").all_inner_texts() == [KEY]
    _shot(page, "2-search")

    page.goto(f"{served}/sessions")  # filter
    page.select_option("select[name=platform]", "irc")
    page.click("#apply")
    page.wait_for_url("**platform=irc*")
    assert page.locator("a.session-link").all_inner_texts() == [IRC_KEY]

    page.goto(f"{served}/sessions?q=deploy")  # open the session
    page.click("a.session-link")
    page.wait_for_url(f"**/session/{CHAT}")
    assert page.locator("#session-key").inner_text() == KEY
    assert "the deploy finished at noon" in page.locator("#conversation").inner_text()
    _shot(page, "3-session")

    page.locator("#t3 a.provenance").click()  # follow the provenance of "how is the deploy going"
    page.wait_for_url("**/source/*lines=4-4*")
    assert page.locator("#excerpt tr.span").inner_text().endswith("User: how is the deploy going")
    _shot(page, "4-provenance")

    page.go_back()
    page.click("#compare")  # revision 0 with 1
    page.wait_for_url(f"**/diff/{CHAT}?a=0&b=1")
    assert "the deploy finished at noon" in page.locator("#diff .add").all_inner_texts().__str__()
    _shot(page, "5-diff")


def test_an_auditor_opens_a_quarantined_input(page, served):
    page.goto(f"{served}/runs")
    _shot(page, "6-runs")
    page.locator("a.run-link").first.click()
    page.wait_for_url("**/runs/*")
    page.locator("a.quarantined-link").first.click()
    page.wait_for_url("**/quarantine/**")
    assert "control bytes" in page.locator("#detail").inner_text()
    assert page.locator("#rerun").inner_text().startswith("reconstruct rerun --out ")
    _shot(page, "7-quarantined")
