"""The package version, in a module of its own so that the package root, the command line and the
reports read it without importing each other (no import cycles)."""

__version__ = "0.2.0"
