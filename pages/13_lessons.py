"""Lessons

Guided lessons for teaching, one idea each: a few steps of a short paragraph, a live figure and a "try it"
control. Presenter mode shows one step per screen for a projector, every step has its own address, and a lesson
downloads as one HTML file that opens anywhere.
"""

import streamlit as st

import ui
from analysis.core.errors import UserError
from ui.lessons import BY_ID, LESSONS
from ui.lessons.base import document

# Presenter mode: large type, the sidebar out of the way, one step filling a 1280x720 screen.
PRESENTER_CSS = """<style>
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"], header {display: none !important;}
.block-container {padding-top: 1rem !important; max-width: 100% !important;}
.stMarkdown p, .stMarkdown li {font-size: 1.45rem !important; line-height: 1.45 !important;}
h2 {font-size: 2.3rem !important;}
</style>"""
PRESENTER_HEIGHT = 520


def location():
    """(lesson, step number from 1, presenter mode) from the address: ?lesson=<id>&step=<n>&present=1."""
    q = st.query_params
    lesson_id = q.get("lesson", LESSONS[0].id)
    if lesson_id not in BY_ID:
        raise UserError(f"There is no lesson '{lesson_id}'; the lessons are: {', '.join(BY_ID)}.")
    lesson, step = BY_ID[lesson_id], q.get("step", "1")
    if not step.isdigit() or not 1 <= int(step) <= len(lesson.steps):
        raise UserError(f"Step '{step}' does not exist: '{lesson_id}' has steps 1 to {len(lesson.steps)}.")
    return lesson, int(step), q.get("present") == "1"


def go(lesson_id: str, step: int, present: bool) -> None:
    """Move to a step by changing the address (a callback: the page then runs once, at the new step)."""
    st.query_params.from_dict({"lesson": lesson_id, "step": str(step), **({"present": "1"} if present else {})})


def prepare_download(lesson) -> None:
    """Every step's figure at its default, then the lesson as one standalone HTML file."""
    figures = []
    with st.status("Building every step's figure…", expanded=False) as status:
        for i, s in enumerate(lesson.steps, 1):
            status.update(label=f"Step {i} of {len(lesson.steps)}: {s.title}")
            figures.append(s.figure(s.control.initial())[0])
        status.update(label="Ready", state="complete")
    st.download_button("Download this lesson (HTML)", document(lesson, figures).encode("utf-8"),
                       file_name=f"embedscope-lesson-{lesson.id}.html", mime="text/html", key="lesson_html",
                       on_click="ignore", type="primary")


with ui.user_errors():
    lesson, n, present = location()
    step = lesson.steps[n - 1]
    if present:
        st.html(PRESENTER_CSS)
    else:
        st.title("Lessons")
        st.session_state["lesson_pick"] = lesson.id
        st.selectbox("Lesson", list(BY_ID), key="lesson_pick", format_func=lambda i: BY_ID[i].title,
                     on_change=lambda: go(st.session_state["lesson_pick"], 1, False))
        st.caption(lesson.summary)

    st.header(f"{n}. {step.title}")
    if why := lesson.unavailable(ui.get_backbone().facts):
        st.info(why)  # not an error: the lesson is fine, the model is another
        st.stop()
    # the buttons come first: on the 720-pixel screen of a projector and usable while a step computes
    back, where, forward, mode = st.columns([1, 1, 1, 3])
    back.button("← Back", key="lesson_back", disabled=n == 1, on_click=go, args=(lesson.id, n - 1, present))
    where.markdown(f"**{n}** / {len(lesson.steps)}")
    forward.button("Next →", key="lesson_next", disabled=n == len(lesson.steps), on_click=go,
                   args=(lesson.id, n + 1, present), type="primary")
    mode.toggle("Presenter mode", value=present, key="lesson_present",
                on_change=lambda: go(lesson.id, n, st.session_state["lesson_present"]),
                help="One step per screen in large type, the sidebar hidden; the address opens this very step.")
    text_col, fig_col = st.columns([2, 3]) if present else (st.container(), st.container())
    with text_col:
        st.markdown(step.text)
        value = step.control.widget(f"lesson_{lesson.id}_{n}")
        if step.question:
            with st.expander(step.question):
                st.markdown(step.answer)
    with fig_col:
        with st.spinner(f"Computing this step's figure: about {step.seconds} s on two CPU cores when nothing is "
                        "cached (`python -m analysis warm` precomputes every lesson)…", show_time=True):
            fig, frame = step.figure(value)
        if present:
            fig.update_layout(height=PRESENTER_HEIGHT, font=dict(size=16))
        ui.show_figure(fig, frame, f"{lesson.id}_step_{n}")

    if not present and st.button("Download this lesson…", key="lesson_prepare",
                                 help="One HTML file with every step's text and figure (interactive), plotly.js "
                                      "included: it opens in any browser, without a server or a network."):
        prepare_download(lesson)
