"""The compute cache's one progress convention: `progress(done, total, message)`.

Every compute-and-store function in `cache` takes `progress=None` and calls it as its work proceeds: units done,
units in all, and one line a person can read ("1,024/5,000 documents (812 cached), 2.1M/9.8M tokens, about 3 min
left"). The pages draw it as a progress bar (`ui.compute.progress_bar`), the command line prints it to stderr
(`cli.commands._common.stderr_progress`). The library's own callbacks are `progress(done, total)`; `counting`
adapts ours to them.

    def progress(done: int, total: int, message: str) -> None:
        print(f"[{done}/{total}] {message}", file=sys.stderr)
"""

from __future__ import annotations

import time
from collections.abc import Callable

# the words of every progress line, the library's too (`duration` is imported from here by the cache's modules)
from analysis.core.eta import duration

Progress = Callable[[int, int, str], None]


def counting(progress: Progress | None, unit: str) -> Callable[[int, int], None] | None:
    """A library callback `(done, total)` that reports "done/total unit" through `progress` (None for None)."""
    if progress is None:
        return None
    return lambda done, total: progress(done, total, f"{done:,}/{total:,} {unit}".rstrip())


def amount(n: float) -> str:
    """812, 35.2k, 2.1M: a token count in a progress line."""
    return f"{n:,.0f}" if n < 1e4 else f"{n / 1e3:.1f}k" if n < 1e6 else f"{n / 1e6:.1f}M"


class Meter:
    """Documents and tokens done over a corpus, some of them found in the store, and the time left estimated from
    the rate of the tokens computed so far (by documents when the method cannot count its tokens). Longest
    documents run first, so the estimate starts high and comes down."""

    def __init__(self, progress: Progress | None, documents: int, cached: int = 0, cached_tokens: int = 0):
        self.progress, self.documents, self.cached = progress, documents, cached
        self.cached_tokens = cached_tokens
        self.done, self.tokens, self.tokens_total = 0, 0, 0  # computed by this call
        self.began = time.perf_counter()

    def start(self) -> None:
        if self.progress is not None:
            self.progress(self.cached, self.documents, self.message())

    def step(self, n: int, tokens: int, tokens_total: int) -> None:
        """`n` more documents computed, holding `tokens` tokens, of `tokens_total` tokens to compute in all."""
        self.done, self.tokens, self.tokens_total = self.done + n, self.tokens + tokens, tokens_total
        if self.progress is not None:
            self.progress(self.cached + self.done, self.documents, self.message())

    def seconds_left(self) -> float | None:
        spent = time.perf_counter() - self.began
        if self.tokens_total > 0 and self.tokens > 0:
            return spent / self.tokens * (self.tokens_total - self.tokens)
        todo = self.documents - self.cached
        return spent / self.done * (todo - self.done) if self.done else None

    def message(self) -> str:
        text = f"{self.cached + self.done:,}/{self.documents:,} documents"
        if self.cached:
            text += f" ({self.cached:,} from the cache)"
        if self.tokens_total:
            done, total = self.cached_tokens + self.tokens, self.cached_tokens + self.tokens_total
            text += f", {amount(done)}/{amount(total)} tokens"
        left = self.seconds_left()
        if left is not None and self.cached + self.done < self.documents:
            text += f", about {duration(left)} left"
        return text
