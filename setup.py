"""The build's one extra step: the app travels inside the wheel.

A checkout runs the app as `streamlit run app.py`, with the pages in `pages/` and the published records in
`docs/results/` and `docs/reports/`. Those folders sit outside the packages, so the wheel gets copies: the entry
script, its pages and Streamlit's settings as `ui/app/` (found by `ui.nav`, started by `embedscope app` from that
folder so Streamlit reads its settings), the records' JSON as
`analysis/experiments/recorded/` (read by `analysis.experiments.machinery.records`). Everything else is in
pyproject.toml.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
COPIES = (("app.py", "ui/app/app.py"), ("pages", "ui/app/pages"),
          (".streamlit/config.toml", "ui/app/.streamlit/config.toml"),
          ("docs/results", "analysis/experiments/recorded"), ("docs/reports", "analysis/experiments/recorded/reports"))
KEEP = {".py", ".json"}  # scripts and records; the reports' HTML (plotly inside) stays in the repository


class BuildWithApp(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):  # an editable install reads the checkout itself
            return
        for source, target in COPIES:
            src, dst = ROOT / source, Path(self.build_lib) / target
            files = [src] if src.is_file() else sorted(p for p in src.glob("*") if p.suffix in KEEP)
            for f in files:
                out = dst if src.is_file() else dst / f.name
                out.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(f, out)


setup(cmdclass={"build_py": BuildWithApp})
