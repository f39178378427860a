"""The package's version: the one place it is written (``pyproject.toml`` reads it from here,
the package root and :func:`pymc_anneal.io.versions` import it)."""

__version__ = "0.1.0"
