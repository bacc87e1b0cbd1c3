"""Errors raised by gradebench.

The tree::

    GradebenchError
    ├── CatalogError        a catalog file or entry is invalid (.path, .entry, .field)
    ├── ConfigError         a run config file is invalid (.path, .field)
    ├── CallError           a model call failed after its retries (.entry, .status, .attempts)
    ├── CacheError          the call cache cannot be opened or read (.path)
    └── ToolLoopError       a job's tool loop hit its step limit (.entry, .steps)

Misuse of the API (a bad argument) raises ``ValueError`` or ``TypeError`` naming the value.
"""

from __future__ import annotations

from .redact import scrub, utf8_safe

__all__ = [
    "CacheError",
    "CallError",
    "CatalogError",
    "ConfigError",
    "GradebenchError",
    "ToolLoopError",
]


class GradebenchError(Exception):
    """Root of every error gradebench raises on purpose."""


class CatalogError(GradebenchError):
    """A catalog file or entry is invalid."""

    def __init__(self, message: str, *, path: str | None = None, entry: str | None = None, field: str | None = None):
        super().__init__(message)
        self.path = path
        self.entry = entry
        self.field = field


class ConfigError(GradebenchError):
    """A run config file is invalid."""

    def __init__(self, message: str, *, path: str | None = None, field: str | None = None):
        super().__init__(message)
        self.path = path
        self.field = field


class CallError(GradebenchError):
    """A model call failed for good: after the retries, or with a status that is not retried."""

    def __init__(self, message: str, *, entry: str, status: int | None = None, attempts: int = 1):
        super().__init__(utf8_safe(scrub(message)))  # a provider may echo the key back in its message
        self.entry = entry
        self.status = status
        self.attempts = attempts


class CacheError(GradebenchError):
    """The call cache cannot be opened or read: the message names the folder and what to do."""

    def __init__(self, message: str, *, path: str):
        super().__init__(message)
        self.path = path


class ToolLoopError(GradebenchError):
    """A job's tool loop ran past its step limit or its timeout."""

    def __init__(self, message: str, *, entry: str, steps: int):
        super().__init__(message)
        self.entry = entry
        self.steps = steps
