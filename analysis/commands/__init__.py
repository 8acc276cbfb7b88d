"""One module per `python -m analysis` command (see analysis/__main__.py)."""
