"""End to end in a real browser: `streamlit run app.py` on localhost, opened in Debian's headless Chromium
through Playwright (never a downloaded browser). Screenshots go to a temporary folder (printed)."""

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
LOAD_TIMEOUT_MS = 300_000  # the first start may convert the default model (~30 s) on a busy CPU

pytestmark = pytest.mark.browser


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def chromium_path():
    if not Path(CHROMIUM).is_file():
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"{CHROMIUM} is missing in CI: .ci/run must install Debian's chromium package")
        pytest.skip(f"{CHROMIUM} not found: install Debian's chromium (scripts/install.sh --dev does it)")
    pytest.importorskip("playwright.sync_api", reason="playwright is in requirements-dev.txt")
    return CHROMIUM


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The app on a free localhost port, with a fresh results cache (sharing the real converted models);
    always stopped, whatever the test did."""
    with _running_app(tmp_path_factory.mktemp("server")) as url:
        yield url


@contextlib.contextmanager
def _running_app(root: Path):
    from analysis.core.paths import cache_root

    real_models = cache_root() / "models"
    real_models.mkdir(parents=True, exist_ok=True)
    (root / "cache").mkdir()
    (root / "cache" / "models").symlink_to(real_models, target_is_directory=True)
    env = {**os.environ, "EMBEDSCOPE_CACHE": str(root / "cache")}
    port = _free_port()
    log = root / "streamlit.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
             "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"],
            cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.time() > deadline:
                pytest.fail(f"streamlit did not start (exit {proc.poll()}):\n{log.read_text()[-3000:]}")
            time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def browser(chromium_path):
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="embedscope-chromium-") as profile, sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            profile, executable_path=chromium_path, headless=True, viewport={"width": 1400, "height": 2600},
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"],
        )
        try:
            yield context
        finally:
            context.close()


@pytest.fixture(scope="module")
def shots():
    folder = Path(tempfile.mkdtemp(prefix="embedscope-screens-"))
    print(f"\nscreenshots: {folder}")
    return folder


def _settle(page, *selectors, count=1, timeout_ms=LOAD_TIMEOUT_MS):
    """Wait until each selector matches at least `count` elements and no spinner or skeleton is left."""
    for sel in selectors:
        page.wait_for_function("([sel, n]) => document.querySelectorAll(sel).length >= n", arg=[sel, count],
                               timeout=timeout_ms)
    page.wait_for_function(
        """() => !document.querySelector('[data-testid="stSpinner"], [data-testid="stSkeleton"], '
                                         + '[data-testid="stStatusWidgetRunningIcon"]')""",
        timeout=timeout_ms)
    page.wait_for_timeout(1500)  # a rerun that has just begun would show its spinner by now


def _problems(page) -> list[str]:
    """Texts of exception elements and error alerts on the page."""
    return page.locator('[data-testid="stException"], [data-testid="stAlertContentError"]').all_inner_texts()


def test_home_then_embed_compare(server, browser, shots):
    page = browser.new_page()
    page.goto(server, timeout=60_000)
    page.get_by_role("heading", name="embedscope").wait_for(timeout=LOAD_TIMEOUT_MS)
    _settle(page, '[data-testid="stTable"]', '[data-testid="stPageLink"]')
    sidebar = page.locator('[data-testid="stSidebar"]')
    assert "30 layers" in sidebar.inner_text()  # the default model is loaded and described
    page.screenshot(path=str(shots / "home.png"), full_page=True)
    assert _problems(page) == []

    page.get_by_role("link", name="Embed & compare").first.click()
    page.get_by_role("heading", name="Embed & compare").wait_for(timeout=60_000)
    _settle(page, '[data-testid="stPlotlyChart"]', count=2)
    page.screenshot(path=str(shots / "embed_compare.png"), full_page=True)
    assert _problems(page) == []
    assert page.locator('[data-testid="stPlotlyChart"]').count() == 2  # last + PromptEOL heatmaps
    assert page.locator(".modebar-btn[data-title*='png' i]").count() >= 2  # the PNG button is there


def test_fresh_server_first_request_to_a_sub_page(tmp_path, browser, shots):
    """streamlit#9992: the very first request a new server process gets is a link to a view. It must open that view
    in app.py's frame (sidebar, navigation) without Streamlit's "Page not found" box (see ui/nav.py for why it
    appeared and how it is avoided)."""
    from ui.nav import page_files, url_path

    sensitivity = url_path(next(p for p in page_files() if p.stem.endswith("sensitivity")))
    with _running_app(tmp_path) as url:
        page = browser.new_page()
        try:
            page.goto(f"{url}/{sensitivity}", timeout=60_000)
            page.get_by_role("heading", name="Sensitivity").first.wait_for(timeout=LOAD_TIMEOUT_MS)
            page.locator('[data-testid="stSidebar"]').get_by_role("button", name="Clear cache").first.wait_for(
                timeout=LOAD_TIMEOUT_MS)
            page.wait_for_timeout(3000)  # the box, if any, arrives with the first messages; give it time anyway
            page.screenshot(path=str(shots / "fresh_server_deep_link.png"), full_page=True)
            body = page.locator("body").inner_text()
            assert "Page not found" not in body and "does not seem to exist" not in body
            assert page.url.endswith(f"/{sensitivity}")  # still the view's own address, not the home page
        finally:
            page.close()


def test_direct_link_keeps_the_sidebar(server, browser, shots):
    page = browser.new_page()
    page.goto(f"{server}/embed_compare", timeout=60_000)
    page.get_by_role("heading", name="Embed & compare").wait_for(timeout=LOAD_TIMEOUT_MS)
    _settle(page, '[data-testid="stPlotlyChart"]', count=2)
    page.screenshot(path=str(shots / "direct_link.png"), full_page=True)
    assert "Clear cache" in page.locator('[data-testid="stSidebar"]').inner_text()
    assert _problems(page) == []


def _other_pages():
    from ui.nav import page_files, page_title, url_path

    return [(url_path(p), page_title(p)) for p in page_files()[1:]]


@pytest.mark.parametrize("path,title", _other_pages(), ids=[p for p, _ in _other_pages()])
def test_every_page_opens_without_an_error(server, browser, shots, path, title):
    """Each view, opened by its link, renders its heading with the model loaded and shows no exception or error
    (pages that compute on a button show their inputs; the others their default figures)."""
    page = browser.new_page()
    try:
        page.goto(f"{server}/{path}", timeout=60_000)
        page.get_by_role("heading", name=title).first.wait_for(timeout=LOAD_TIMEOUT_MS)
        _settle(page, '[data-testid="stSidebar"]')
        page.screenshot(path=str(shots / f"{path}.png"), full_page=True)
        assert _problems(page) == []
        assert "30 layers" in page.locator('[data-testid="stSidebar"]').inner_text()
    finally:
        page.close()


def test_compare_models_opens_with_both_built_in_models(server, browser, shots):
    """Compare models loads SmolLM2 and Gemma 3 270M side by side and names both (ID captions or their
    not-computed notes, and the model pickers)."""
    page = browser.new_page()
    try:
        from ui.nav import page_files, url_path

        compare = next(p for p in page_files() if p.name.endswith("compare_models.py"))
        page.goto(f"{server}/{url_path(compare)}", timeout=60_000)
        page.get_by_role("heading", name="Compare models").first.wait_for(timeout=LOAD_TIMEOUT_MS)
        page.get_by_role("heading", name="Intrinsic dimension over depth").wait_for(timeout=2 * LOAD_TIMEOUT_MS)
        _settle(page, '[data-testid="stPlotlyChart"]')
        page.screenshot(path=str(shots / "compare_models.png"), full_page=True)
        body = page.locator('[data-testid="stMain"]').inner_text()
        assert "SmolLM2-135M-Instruct" in body and "Gemma 3 270M" in body
        assert _problems(page) == []
    finally:
        page.close()
