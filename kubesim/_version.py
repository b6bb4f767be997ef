"""kubesim's version: one literal, read by the build (pyproject.toml), the package
(``kubesim.__version__``), the CLI (``kubesim --version``) and replay tokens, which record it."""

__version__ = "0.1.0"
"""kubesim's version (replay tokens record it)."""
