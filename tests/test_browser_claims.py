"""The claims board in a real browser (headless Chromium, as tests/test_browser.py): the Claims page on a fresh
server draws a stored board of the default model (the verdict figure, chips with their numbers, the deviations, links
to the views with the evidence, one of which opens its view), and the board's standalone HTML draws its figure from
disk with the network cut off. The board is made here from the claims read from the published records (quick)."""

import pytest

from test_browser import LOAD_TIMEOUT_MS, _problems, _running_app, _settle, browser, chromium_path, shots  # noqa: F401

pytestmark = pytest.mark.browser
QUICK = ["gircse-scaling", "comp-ratio", "comp-paragraph", "comp-names", "c2v-length", "comp-reconstruction"]


@pytest.fixture(scope="module")
def board(real):
    from analysis.experiments.claims.board import choose, prepare, run
    from analysis.experiments.claims.context import Settings
    from analysis.compute.direct import Direct

    return run(prepare(real, Direct(), Settings(), claims=choose(QUICK), rate=(0.1, 1.0, 10.0, 1000.0)))


def test_the_page_draws_a_stored_board_and_opens_its_evidence(board, tmp_path, browser, shots):  # noqa: F811
    from cache import Store
    from cache.claims import save_board

    with _running_app(tmp_path) as url:
        save_board(Store(tmp_path / "cache"), board)  # as `python -m analysis claims` leaves it
        page = browser.new_page()
        try:
            page.goto(f"{url}/claims", timeout=60_000)
            page.get_by_role("heading", name="Claims").first.wait_for(timeout=LOAD_TIMEOUT_MS)
            _settle(page, '[data-testid="stPlotlyChart"]')
            page.screenshot(path=str(shots / "claims.png"), full_page=True)
            assert _problems(page) == []
            main = page.locator('[data-testid="stMain"]').inner_text()
            assert "holds here" in main and "reversed here" in main and "the newest board in this cache" in main
            assert "Deviations beside it" in main and "GIRCSE" in main and "Sentence-pool compression" in main
            link = page.locator("a[href*='soft_tokens']").first
            assert link.count() == 1
            link.click()
            page.get_by_role("heading", name="Soft tokens").first.wait_for(timeout=LOAD_TIMEOUT_MS)
            _settle(page, '[data-testid="stSidebar"]')
            page.screenshot(path=str(shots / "claims_evidence_link.png"), full_page=True)
            assert _problems(page) == []
        finally:
            page.close()


def test_the_downloaded_board_draws_offline(board, tmp_path, browser, shots):  # noqa: F811
    from analysis.core.standalone import save
    from analysis.experiments.claims.html import render

    path = save(render([board]), tmp_path / "claims.html")
    page = browser.new_page()
    try:
        requested = []
        page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:")
                   else (requested.append(route.request.url), route.abort()))
        page.goto(path.as_uri())
        page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot .main-svg').length >= 1",
                               timeout=60_000)
        page.screenshot(path=str(shots / "claims_offline.png"), full_page=True)
        body = page.locator("body").inner_text()
        assert requested == [] and "Does the paper hold on SmolLM2-135M-Instruct?" in body
        assert all(cid in body for cid in QUICK) and "holds here" in body
    finally:
        page.close()
