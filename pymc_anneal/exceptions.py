"""Errors and warnings raised by pymc_anneal."""


class AnnealingError(ValueError):
    """An input that pymc_anneal cannot anneal: the message says what and how to fix it."""


class AnnealingWarning(UserWarning):
    """A result that is computed but should be read with care (e.g. a low weight ESS)."""
