"""Errors and warnings raised by pymc_anneal."""

import contextlib
import pathlib
import sys
import warnings


class AnnealingError(ValueError):
    """An input that pymc_anneal cannot anneal: the message says what and how to fix it."""


class AnnealingWarning(UserWarning):
    """A result that is computed but should be read with care (e.g. a low weight ESS)."""


_INTERNAL = (str(pathlib.Path(__file__).resolve().parent), contextlib.__file__)
"""Files a warning never points at: the package's, and contextlib's (whose decorator
wrapper, :func:`pymc_anneal.backends.interruptible`, stands between an entry point and its
caller)."""


def warn(message: str) -> None:
    """Raise :class:`AnnealingWarning` with ``message`` at the caller's line: the first frame
    outside the package (however deep inside it the warning is found), so that a user sees
    the line of their own code that asked for the result."""
    frame, level = sys._getframe(1), 1  # warnings' own skip_file_prefixes stops at a wrapper
    while frame is not None and frame.f_code.co_filename.startswith(_INTERNAL):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, AnnealingWarning, stacklevel=level + 1)
