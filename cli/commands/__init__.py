"""One module per `python -m analysis` command (see cli/__init__.py)."""
