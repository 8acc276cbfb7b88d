"""Lessons: one module per idea, each a `Lesson` of steps (`ui.lessons.base`), drawn by the Lessons page and
written out whole by its download button. `LESSONS` is the order the picker shows."""

from ui.lessons import (causal2vec, compression, compression_layers, soft_tokens, summary_tokens, why_last,
                        why_similar)
from ui.lessons.base import Control, Lesson, Step

LESSONS: tuple[Lesson, ...] = (why_last.LESSON, compression_layers.LESSON, summary_tokens.LESSON, soft_tokens.LESSON,
                                causal2vec.LESSON, compression.LESSON, why_similar.LESSON)
BY_ID = {lesson.id: lesson for lesson in LESSONS}

__all__ = ["LESSONS", "BY_ID", "Lesson", "Step", "Control"]
