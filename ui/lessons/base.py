"""A lesson is data: steps, each a paragraph, one live figure, one "try it" control and an optional question.

A step's figure is `figure(value) -> (plotly Figure, DataFrame)`, built from the library through the cache (the
views in `ui.lessons.views`); `value` is what the step's control holds, its default for the step as written,
the student's own input otherwise (checked by the same `ui` validation and budgets as every page)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import streamlit as st

from analysis.core.errors import UserError
from analysis.weights.artefacts import shipped_dir
from analysis.core.standalone import Document, details, heading, paragraphs, section
from ui.inputs import check_sizes
from ui.model import get_backbone


@dataclass(frozen=True)
class Control:
    """The step's "try it" widget. kind: text (one text), texts (one per line), layer (a hidden state, 0..L of
    the loaded model; default None = L), slider (lo..hi), choice (one of `options`, shown by `labels`)."""
    kind: str
    label: str
    default: object = None
    lo: int = 0
    hi: int = 0
    options: tuple = ()
    labels: tuple = ()
    help: str = ""

    def initial(self):
        """The value the step is written for (the model's last hidden state for a layer left at None)."""
        if self.kind == "layer" and self.default is None:
            return get_backbone().facts.n_layers
        return self.default

    def widget(self, key: str):
        """Draw the widget and return its value, validated as everywhere else in the app."""
        if self.kind == "text":
            text = st.text_area(self.label, self.default, key=key, height=80, help=self.help).strip()
            if not text:
                raise UserError("Enter a text.")
            check_sizes([text], "the text")
            return text
        if self.kind == "texts":
            lines = st.text_area(self.label, "\n".join(self.default), key=key, height=140, help=self.help)
            texts = [t.strip() for t in lines.splitlines() if t.strip()]
            if len(texts) < 2:
                raise UserError("Enter at least two texts, one per line.")
            check_sizes(texts, "the texts")
            return texts
        if self.kind == "layer":
            L = get_backbone().facts.n_layers
            return st.slider(self.label, self.lo, L, min(self.initial(), L), key=key, help=self.help)
        if self.kind == "slider":
            return st.slider(self.label, self.lo, self.hi, self.default, key=key, help=self.help)
        if self.kind == "choice":
            names = dict(zip(self.options, self.labels or self.options))
            return st.radio(self.label, self.options, index=self.options.index(self.default), key=key,
                            horizontal=True, format_func=names.get, help=self.help)
        raise ValueError(f"unknown control kind {self.kind!r}")


@dataclass(frozen=True)
class Step:
    title: str
    text: str  # a short paragraph in plain words: one idea
    control: Control
    figure: Callable  # figure(value) -> (plotly Figure, DataFrame)
    question: str = ""
    answer: str = ""
    seconds: int = 20  # about how long the figure takes when nothing is cached (default model, two CPU cores)


@dataclass(frozen=True)
class Lesson:
    id: str  # the URL's ?lesson=
    title: str
    summary: str
    steps: tuple[Step, ...]
    trained: str = ""  # the trained system (analysis/artefacts/<trained>/) whose shipped weights the lesson reads

    def unavailable(self, facts) -> str:
        """Why the lesson cannot run on the model `facts` describes (one sentence), or "" when it can."""
        if not self.trained or (shipped_dir(self.trained, facts) / "manifest.json").is_file():
            return ""
        return (f"This lesson reads the {self.trained} weights this repository trained for SmolLM2-135M-Instruct, "
                "the default model; choose it in the sidebar to follow it.")


def hidden_state(layer: int) -> int:
    """A layer control's value as a method parameter: the last hidden state as -1, the pages' default, so a step
    left at its default reads the same cache entries as the pages."""
    return -1 if layer >= get_backbone().facts.n_layers else layer


def document(lesson: Lesson, figures: list) -> str:
    """The lesson as one standalone HTML file: every step's paragraph, its figure (`figures[i]` for step i, as
    the step shows it with its control left at its default) and its question, answer folded."""
    doc = Document(lesson.title, lesson.summary + "\n\nMade with embedscope; the figures are interactive (hover, "
                   "zoom) and need no server or network.")
    for i, (s, fig) in enumerate(zip(lesson.steps, figures, strict=True), 1):
        doc.add(section(heading(f"{i}. {s.title}"), paragraphs(s.text), doc.figure(fig),
                        details(s.question, s.answer) if s.question else ""))
    return doc.html()
