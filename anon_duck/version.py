"""The package version, in a module of its own: the API and the CLI read it without importing
the package's ``__init__`` (which imports the API lazily), so no import runs back up."""
__version__ = "0.1.0"
