"""Checks on raw text shared by file reading and tokenisation (standard library only)."""

from __future__ import annotations

import unicodedata


def has_visible_text(text: str) -> bool:
    """Whether `text` holds anything but whitespace, NUL bytes and other control/format characters."""
    return any(not ch.isspace() and unicodedata.category(ch)[0] != "C" for ch in text)
