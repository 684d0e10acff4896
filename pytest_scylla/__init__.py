"""pytest-scylla: ablation evaluation of agentic coding CLIs as a pytest plugin."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("pytest-scylla")
except PackageNotFoundError:  # running from a checkout that is not installed
    __version__ = "0+unknown"
