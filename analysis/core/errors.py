"""Errors a user can act on. The app and the command line show their message, never a traceback."""


class UserError(Exception):
    """Bad input, a model that cannot be found offline, a malformed file: one clear sentence."""


class TruncationWarning(UserWarning):
    """Some texts were longer than the model's limit and were cut."""


class StorageWarning(UserWarning):
    """A folder the tool keeps its work in (the cache, converted models, scratch) cannot be written (read-only, full,
    missing with an unwritable parent): the work is done and its result is right, only not kept."""
