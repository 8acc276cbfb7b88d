"""`python -m analysis app [-- streamlit options]`: start the app, from a checkout or an installed wheel."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

from analysis.core.errors import UserError

HELP = ("Start the app (Streamlit) on http://localhost:8501, from a checkout or an installed wheel; options after "
        "`--` go to `streamlit run` (e.g. `-- --server.port 8600`).")


def add_arguments(parser) -> None:
    parser.add_argument("streamlit_args", nargs="*", metavar="STREAMLIT_OPTION",
                        help="passed to `streamlit run` as given, e.g. --server.port 8600 (put `--` before them)")


def entry_script() -> Path:
    """app.py beside pages/: the checkout's, else the copy an installed wheel carries in ui/app/ (setup.py). Found
    from the `ui` package's location without importing it (the command line never imports Streamlit)."""
    spec = importlib.util.find_spec("ui")
    here = Path(spec.origin).resolve().parent if spec is not None and spec.origin else None
    for app in ([here.parent / "app.py", here / "app" / "app.py"] if here else []):
        if app.is_file() and (app.parent / "pages").is_dir():
            return app
    raise UserError("The app's entry script was not found beside the installed `ui` package; reinstall embedscope "
                    "(`bash scripts/install.sh`).")


def run(args) -> None:
    """Become Streamlit (exec, not a child process): a stop signal to this process then reaches the server itself,
    so stopping `embedscope app` never leaves a server running behind it."""
    app = entry_script()
    os.chdir(app.parent)  # Streamlit reads .streamlit/config.toml from the working folder
    os.execv(sys.executable, [sys.executable, "-m", "streamlit", "run", str(app), *args.streamlit_args])
