"""The Benchmark page's long-document family in a real browser (headless Chromium, as tests/test_browser.py) on the
default model: the family selector, then nDCG@1 against document length per method (LongEmbed's figure)."""

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from test_browser import LOAD_TIMEOUT_MS, _problems, _settle, browser, chromium_path, server, shots  # noqa: F401

pytestmark = pytest.mark.browser


def test_long_documents_figure_in_the_browser(server, browser, shots):  # noqa: F811
    from ui.nav import page_files, url_path

    bench = next(p for p in page_files() if p.name.endswith("benchmark.py"))
    page = browser.new_page()
    try:
        page.goto(f"{server}/{url_path(bench)}", timeout=60_000)
        page.get_by_role("heading", name="Benchmark").first.wait_for(timeout=LOAD_TIMEOUT_MS)
        _settle(page, '[data-testid="stTable"]')
        page.get_by_text("Long documents", exact=True).click()
        slider = page.locator('.st-key-bench_longdoc_n input[type="range"]')  # the slider's own (hidden) input
        slider.wait_for(state="attached", timeout=LOAD_TIMEOUT_MS)
        slider.focus()
        page.keyboard.press("Home")  # 2 documents per length: a short run on the real model
        page.wait_for_function("() => document.querySelector('.st-key-bench_longdoc_n input[type=range]').value "
                               "=== '2'", timeout=60_000)
        ask = page.locator(".st-key-bench_compute button")  # cells not in the cache past 100k tokens wait for it
        try:
            ask.wait_for(timeout=15_000)
            ask.click()
        except PlaywrightTimeout:  # stored from an earlier run: drawn at once
            pass
        page.wait_for_function("() => [...document.querySelectorAll('[data-testid=stPlotlyChart]')]"
                               ".some(c => c.innerText.includes('document length (tokens)'))", timeout=LOAD_TIMEOUT_MS)
        _settle(page, '[data-testid="stPlotlyChart"]', '[data-testid="stTable"]')
        chart = page.locator('[data-testid="stPlotlyChart"]', has_text="document length (tokens)").first
        chart.scroll_into_view_if_needed()
        page.screenshot(path=str(shots / "benchmark_longdoc.png"), full_page=True)
        assert _problems(page) == []
        text = chart.inner_text()
        assert "document length (tokens)" in text and "nDCG@1" in text
        assert all(x in text for x in ("256", "512", "1,024"))
        assert page.locator(".js-plotly-plot .scatterlayer .trace").count() == 3  # last, mean, PromptEOL
    finally:
        page.close()
