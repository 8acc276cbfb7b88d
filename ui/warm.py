"""Fill the cache with what every lesson step and every page's default view needs, by opening each of them
headless (Streamlit's AppTest) on the chosen model: what is precomputed is by construction what they draw,
through the same cache keys. Run as `python -m ui.warm` by `python -m analysis warm` (the command line may not
import Streamlit); a progress bar with a time estimate goes to stderr, one JSON summary line to stdout."""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time

from streamlit.testing.v1 import AppTest

from ui.nav import PAGES_DIR, page_files

LESSONS_PAGE = "13_lessons.py"
# Rough first-figure times of each page's default view on a fresh cache, two shared CPU cores (issue 28's
# measurements, rounded up); a page not listed is counted at DEFAULT_SECONDS. Only the estimate uses them.
PAGE_SECONDS = {"2_embed_compare.py": 30, "4_attention.py": 150, "6_sensitivity.py": 110, "8_benchmark.py": 60,
                "16_explain.py": 90}
DEFAULT_SECONDS = 30
MODEL_KEY = "embedscope_model"  # ui.model.MODEL_KEY, repeated so this module does not start Streamlit's widgets
# Pages whose default view draws only after a button (the computation is too long to start unasked on a cold
# cache): the button warm presses after the first run when it is shown, so the default view is computed too and a
# visitor sees the figure without pressing. Not the Report page's "Build the report": its default view has no figure.
PRESS = {"3_intrinsic_dimension.py": "id_compute",  # the default texts' trajectory
         "5_layer_explorer.py": "explorer_first_run",  # shown only without the layers=auto window; runs the sweep
         "10_compare_models.py": "cmp_id_run"}  # both models' trajectories


def items(model: str) -> list[tuple[str, dict, int]]:
    """(label, AppTest settings, estimated seconds) for every lesson step and every other page."""
    from ui.lessons import LESSONS  # lazy: keeps torch off the pages' and the command line's start

    out = [(f"lesson {lesson.id}, step {i}", {"page": LESSONS_PAGE, "query": {"lesson": lesson.id, "step": str(i)}},
            step.seconds) for lesson in LESSONS for i, step in enumerate(lesson.steps, 1)]
    out += [(f"page {p.stem}", {"page": p.name, "query": {}}, PAGE_SECONDS.get(p.name, DEFAULT_SECONDS))
            for p in page_files() if p.name != LESSONS_PAGE]
    return [(f"{model}: {label}", {**settings, "model": model}, sec) for label, settings, sec in out]


def open_headless(settings: dict) -> list[str]:
    """Run one page to the end on the model, pressing its `PRESS` button when shown; the error messages it
    showed (none when all went well)."""
    at = AppTest.from_file(str(PAGES_DIR / settings["page"]), default_timeout=3600)
    at.session_state[MODEL_KEY] = settings["model"]
    at.query_params.update(settings["query"])
    at.run()
    key = PRESS.get(settings["page"])
    if key is not None and not at.exception and any(b.key == key for b in at.button):
        at.button(key=key).click().run()
    return [str(e.value) for e in at.exception] + [str(e.value) for e in at.error]


def clock(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    return f"{m // 60}:{m % 60:02d}:{s:02d}" if m >= 60 else f"{m}:{s:02d}"


def bar(done: int, total: int, label: str, elapsed: float, left: float) -> None:
    filled = int(30 * done / max(total, 1))
    sys.stderr.write(f"\r[{'#' * filled}{'.' * (30 - filled)}] {done}/{total} {elapsed and clock(elapsed)} elapsed, "
                     f"about {clock(left)} left · {label[:60]:<60}")
    sys.stderr.flush()


def warm(models: list[str]) -> dict:
    todo = [it for m in models for it in items(m)]
    estimate = sum(sec for _, _, sec in todo)
    sys.stderr.write(f"warm: {len(todo)} lesson steps and pages on {', '.join(models)}; about {clock(estimate)} "
                     "on two CPU cores with nothing cached (less for what is)\n")
    start, spent_estimate, failed = time.perf_counter(), 0, []
    for i, (label, settings, sec) in enumerate(todo):
        elapsed = time.perf_counter() - start
        pace = elapsed / spent_estimate if spent_estimate else 1.0  # how this machine compares with the estimates
        bar(i, len(todo), label, elapsed, (estimate - spent_estimate) * pace)
        shown = open_headless(settings)
        if shown:
            failed.append({"item": label, "message": shown[0]})
        spent_estimate += sec
    seconds = time.perf_counter() - start
    bar(len(todo), len(todo), "done", seconds, 0)
    sys.stderr.write("\n")
    return {"models": models, "items": len(todo), "seconds": round(seconds, 1), "not_drawn": failed}


def main(argv=None) -> None:
    # lazy: keeps torch, transformers off the pages' and the command line's start
    from transformers.utils import logging as hf_logging

    parser = argparse.ArgumentParser(prog="python -m ui.warm")
    parser.add_argument("models", nargs="+")
    hf_logging.disable_progress_bar()  # stderr is the progress bar's
    for name in list(logging.root.manager.loggerDict):  # pages run outside a server warn on every call
        if name.startswith("streamlit"):
            logging.getLogger(name).setLevel(logging.ERROR)
    print(json.dumps(warm(parser.parse_args(argv).models)))


if __name__ == "__main__":
    main()
