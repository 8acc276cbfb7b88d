"""The Lessons page, headless with AppTest on a tiny random Llama (a local folder) in an isolated cache: every step
of every lesson that runs without shipped weights, the step addresses, Next/Back, presenter mode, the download;
and the standalone HTML export. Steps that need weights trained for the default model are in
tests/test_lessons_real.py."""

import re
from html.parser import HTMLParser
from pathlib import Path

import plotly.graph_objects as go
import pytest
from streamlit.testing.v1 import AppTest

from apptools import errors, figures, isolated_cache
from ui.lessons import BY_ID, LESSONS
from ui.lessons.base import document

REPO = Path(__file__).resolve().parent.parent
PAGE = str(REPO / "pages" / "13_lessons.py")
NEEDS_SHIPPED = {lesson.id for lesson in LESSONS if lesson.trained}  # weights trained for the default model


@pytest.fixture(scope="module", autouse=True)
def lesson_cache(tmp_path_factory):
    with isolated_cache(tmp_path_factory, shared=()) as root:
        yield root


# Controls whose default names a real model: the tiny run keeps the sidebar's (tiny) model instead.
ON_TINY = {("where-compress", 1): "sidebar", ("where-compress", 4): "sidebar"}


def open_step(folder, lesson: str, step: int, present: bool = False) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=300)
    at.session_state["embedscope_model"] = str(folder)
    if (lesson, step) in ON_TINY:
        at.session_state[f"lesson_{lesson}_{step}"] = ON_TINY[lesson, step]
    at.query_params.update({"lesson": lesson, "step": str(step), **({"present": "1"} if present else {})})
    return at.run()


STEPS = [(lesson.id, i) for lesson in LESSONS if lesson.id not in NEEDS_SHIPPED
         for i in range(1, len(lesson.steps) + 1)]


@pytest.mark.parametrize("lesson,step", STEPS)
def test_every_step_draws_its_figure(tiny_folder, lesson, step):
    at = open_step(tiny_folder, lesson, step)
    assert not at.exception, at.exception
    assert not errors(at), errors(at)
    assert at.header[0].value == f"{step}. {BY_ID[lesson].steps[step - 1].title}"
    assert len(figures(at)) == 1


def test_next_back_and_presenter_mode_follow_the_address(tiny_folder):
    at = open_step(tiny_folder, LESSONS[0].id, 1)
    at.button(key="lesson_next").click().run()
    assert at.query_params["step"] == "2" and at.header[0].value.startswith("2. ")
    at.button(key="lesson_back").click().run()
    assert at.query_params["step"] == "1"
    at.toggle(key="lesson_present").set_value(True).run()
    assert at.query_params["present"] == "1" and not at.title  # no page title: one step per screen
    assert figures(at)[0]["layout"]["height"] == 520


@pytest.mark.parametrize("lesson", sorted(NEEDS_SHIPPED))
def test_a_lesson_on_trained_weights_says_which_model_it_needs(tiny_folder, lesson):
    at = open_step(tiny_folder, lesson, 1)
    assert not at.exception and not errors(at)
    assert "trained for SmolLM2-135M-Instruct" in at.info[0].value and not figures(at)


def test_a_bad_address_is_one_sentence(tiny_folder):
    at = open_step(tiny_folder, "nope", 1)
    assert not at.exception and "There is no lesson 'nope'" in errors(at)[0]
    at = open_step(tiny_folder, LESSONS[0].id, 99)
    assert not at.exception and "Step '99' does not exist" in errors(at)[0]


def test_a_students_text_goes_through_the_budgets(tiny_folder):
    at = open_step(tiny_folder, "why-last", 2)
    at.text_area(key="lesson_why-last_2").set_value("x" * 100_000).run()
    assert not at.exception and "characters" in errors(at)[0]


def test_warm_opens_every_lesson_step_and_every_other_page():
    from ui import warm
    from ui.nav import page_files

    labels = [label for label, _, _ in warm.items("m")]
    assert len(labels) == sum(len(lesson.steps) for lesson in LESSONS) + len(page_files()) - 1
    assert "m: lesson why-last, step 1" in labels and "m: page 2_embed_compare" in labels
    assert not any("13_lessons" in label for label in labels)


def test_warm_reports_what_a_page_could_not_draw(tiny_folder):
    from ui import warm

    shown = warm.open_headless({"page": warm.LESSONS_PAGE, "query": {"lesson": "nope"}, "model": str(tiny_folder)})
    assert shown and "There is no lesson 'nope'" in shown[0]
    assert warm.open_headless({"page": warm.LESSONS_PAGE, "query": {"lesson": "why-last", "step": "1"},
                               "model": str(tiny_folder)}) == []


def test_warm_presses_the_button_a_default_view_waits_for(tiny_folder):
    """The ID page draws only after Compute on a cold cache; after warm it opens with its figure, unpressed."""
    from ui import warm

    def opened() -> AppTest:
        at = AppTest.from_file(str(REPO / "pages" / "3_intrinsic_dimension.py"), default_timeout=300)
        at.session_state["embedscope_model"] = str(tiny_folder)
        return at.run()

    at = opened()
    assert not figures(at) and any("Not computed yet" in i.value for i in at.info)
    assert warm.open_headless({"page": "3_intrinsic_dimension.py", "query": {}, "model": str(tiny_folder)}) == []
    at = opened()
    assert not at.exception and not errors(at) and len(figures(at)) == 1
    assert not any("Not computed yet" in i.value for i in at.info)


class _Parsed(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.divs, self.scripts, self.headings, self._in_h2 = [], [], 0, [], False

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag == "div" and dict(attrs).get("id", "").startswith("figure-"):
            self.divs.append(dict(attrs)["id"])
        self.scripts += tag == "script"
        self._in_h2 = tag == "h2"

    def handle_data(self, data):
        if self._in_h2:
            self.headings.append(data)
            self._in_h2 = False


def test_lesson_html_holds_every_step_and_figure_and_plotly_once():
    lesson = LESSONS[0]
    figs = [go.Figure(go.Bar(x=[1, 2], y=[i, i + 1])) for i in range(len(lesson.steps))]
    html = document(lesson, figs)
    parsed = _Parsed()
    parsed.feed(html)
    assert parsed.divs == [f"figure-{i}" for i in range(len(lesson.steps))]
    assert html.count('id="plotly-gz"') == 1 and html.count('id="figures-gz"') == 1  # the library embedded once
    readable = re.sub(r'(<script id="[a-z]+-gz"[^>]*>)[^<]*', r"\1", html)  # without the compressed blobs
    assert "src=" not in readable and "cdn" not in readable.lower()  # nothing is fetched
    assert len(html.encode("utf-8")) <= 2_000_000  # a lesson download stays under 2 MB
    for s in lesson.steps:
        assert s.title in html
    assert html.count("<details>") == sum(bool(s.question) for s in lesson.steps)


def test_every_page_offers_its_figures_as_one_html(tiny_folder):
    from ui.figures import page_html

    at = open_step(tiny_folder, "why-last", 1)
    assert "Save this page's figures (HTML)" in [b.proto.label for b in at.sidebar.get("download_button")]
    parsed = _Parsed()
    parsed.feed(page_html([("a_b", go.Figure(go.Bar(y=[1]))), ("c", go.Figure(go.Scatter(y=[2])))]).decode())
    assert parsed.divs == ["figure-0", "figure-1"] and "a b" in parsed.headings


def test_export_escapes_text_and_keeps_markup_subset():
    from analysis.core.standalone import Document, paragraphs

    html = Document("<T>").add(paragraphs("**bold** and *it* and `code` <script>x</script>")).html()
    assert "<strong>bold</strong>" in html and "<em>it</em>" in html and "<code>code</code>" in html
    assert "&lt;script&gt;x&lt;/script&gt;" in html and "<title>&lt;T&gt;</title>" in html
