"""The installed version of antiamp (one place that every module may import)."""

from importlib.metadata import PackageNotFoundError, version as _version

try:
    __version__ = _version("antiamp")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0+unknown"
