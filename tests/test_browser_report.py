"""A model report opened from disk in a real browser (headless Chromium, as tests/test_browser.py) with the network
cut off: standalone and with the shared plotly.gz.js that scripts/reports.sh writes, every figure drawn."""

import json

import pytest

from test_browser import browser, chromium_path, shots  # noqa: F401
from test_report import made, setup  # noqa: F401

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("shared", [False, True], ids=["standalone", "shared-plotly"])
def test_a_saved_report_draws_every_figure_offline(made, tmp_path, browser, shots, shared):  # noqa: F811
    from analysis.report.html import save

    report = json.loads(made[3].with_suffix(".json").read_text(encoding="utf-8"))
    html_path, _ = save(report, tmp_path / "report.html", shared_plotly=shared)
    figures = html_path.read_text(encoding="utf-8").count('class="figure"')
    page = browser.new_page()
    try:
        requested = []
        page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:")
                   else (requested.append(route.request.url), route.abort()))
        page.goto(html_path.as_uri())
        page.wait_for_function("n => document.querySelectorAll('.js-plotly-plot .main-svg').length >= n",
                               arg=figures, timeout=60_000)
        page.screenshot(path=str(shots / f"report_{'shared' if shared else 'standalone'}.png"), full_page=True)
        assert figures >= 3 and requested == []
        assert "Recommendation" in page.locator("body").inner_text()
    finally:
        page.close()
