"""The package version, in a module of its own so the package can read it without importing itself."""

__version__ = "0.1.0"
