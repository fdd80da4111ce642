"""The errors and warnings of loading a user's model or data file (:mod:`featurelens._loading`,
:mod:`featurelens._fitted_categories`); the commands turn a :class:`LoadError` into its exit code."""

from __future__ import annotations

__all__ = ["LoadError", "LoadWarning"]


class LoadError(ValueError):
    """A model or data file that cannot be loaded; ``exit_code`` 2 = usage, 1 = bad file."""

    def __init__(self, message: str, exit_code: int = 1):
        super().__init__(message)
        self.exit_code = int(exit_code)


class LoadWarning(UserWarning):
    """Data that load, but not exactly as written: a category the model was not fitted on, read
    as missing (the commands print these as one line each)."""
