"""A lesson in a real browser (headless Chromium through Playwright, as tests/test_browser.py): presenter mode walked
through its step addresses on a freshly started server, and the downloaded lesson opened from disk with the
network cut off, every figure drawn."""

from pathlib import Path

import pytest

from test_browser import LOAD_TIMEOUT_MS, _problems, _running_app, _settle, browser, chromium_path, shots  # noqa: F401
from ui.lessons import BY_ID

pytestmark = pytest.mark.browser
LESSON = BY_ID["why-last"]  # its steps compute in seconds on the default model


def test_presenter_mode_step_addresses_on_a_fresh_server(tmp_path, browser, shots):  # noqa: F811
    with _running_app(tmp_path) as url:
        page = browser.new_page()
        page.set_viewport_size({"width": 1280, "height": 720})  # a projector
        try:
            for n, step in enumerate(LESSON.steps, 1):
                # the first request of this server process is already a step's address
                page.goto(f"{url}/lessons?lesson={LESSON.id}&step={n}&present=1", timeout=60_000)
                page.get_by_role("heading", name=f"{n}. {step.title}").wait_for(timeout=LOAD_TIMEOUT_MS)
                _settle(page, ".js-plotly-plot .main-svg")
                page.screenshot(path=str(shots / f"lesson_step_{n}.png"))
                assert _problems(page) == []
                assert not page.locator('[data-testid="stSidebar"]').is_visible()  # out of the way
                chart = page.locator('[data-testid="stPlotlyChart"]').first.bounding_box()
                assert chart["x"] + chart["width"] <= 1280 and chart["y"] + chart["height"] <= 720  # on the screen
                nav = page.get_by_role("button", name="Next →").bounding_box()
                assert nav["y"] + nav["height"] <= 720  # Next is on the screen, no scrolling
            page.get_by_role("button", name="← Back").click()
            page.get_by_role("heading", name=f"{len(LESSON.steps) - 1}. ").wait_for(timeout=LOAD_TIMEOUT_MS)
            assert f"step={len(LESSON.steps) - 1}" in page.url and "present=1" in page.url
        finally:
            page.close()


def test_downloaded_lesson_draws_every_figure_offline(tmp_path, browser, shots):  # noqa: F811
    with _running_app(tmp_path) as url:
        page = browser.new_page()
        try:
            page.goto(f"{url}/lessons?lesson={LESSON.id}&step=1", timeout=60_000)
            page.get_by_role("button", name="Download this lesson…").click(timeout=LOAD_TIMEOUT_MS)
            button = page.get_by_role("button", name="Download this lesson (HTML)")
            button.wait_for(timeout=LOAD_TIMEOUT_MS)
            with page.expect_download(timeout=60_000) as download:
                button.click()
            saved = tmp_path / "lesson.html"
            download.value.save_as(saved)
        finally:
            page.close()
    offline = browser.new_page()
    try:
        requested = []
        offline.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:")
                      else (requested.append(route.request.url), route.abort()))
        offline.goto(Path(saved).as_uri())
        offline.wait_for_function("n => document.querySelectorAll('.js-plotly-plot .main-svg').length >= n",
                                  arg=len(LESSON.steps), timeout=60_000)
        offline.screenshot(path=str(shots / "lesson_offline.png"), full_page=True)
        assert offline.locator(".js-plotly-plot").count() == len(LESSON.steps)
        assert requested == []  # nothing reached for the network
        for step in LESSON.steps:
            assert step.title in offline.locator("body").inner_text()
    finally:
        offline.close()
