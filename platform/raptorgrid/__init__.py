"""raptorgrid: the service side of the platform (settings, SQL, Zarr, queue, API, CLI).

Installed as the ``raptorgrid`` package from ``platform/raptorgrid`` (``platform`` itself is a
standard-library module, so that folder is never a package).
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("raptorgrid")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+source"
