"""raptorgrid: the service side of the platform (settings, SQL, Zarr, queue, API, CLI).

Installed as the ``raptorgrid`` package from ``platform/raptorgrid`` (``platform`` itself is a
standard-library module, so that folder is never a package).
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("raptorgrid")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+source"


def open_campaign(campaign_id: int, settings: object | None = None) -> object:
    """A stored campaign's trajectories as an ``xarray.Dataset``: one data variable per state,
    algebraic variable and output by name (``ds["omega[gen2]"]``), over (``run``, ``time``), with
    ``units`` and ``long_name``; ``run`` indexed by run id with the run table (scenario, method,
    configuration, status, work counters, errors) as coordinates; the campaign in the attributes.
    Reads the database and Zarr store of ``settings`` (default: the environment's, i.e. the
    embedded ``./raptorgrid-data``). docs/results.md, "Trajectories by name"."""
    from raptorgrid.cli.errors import existing_database
    from raptorgrid.export import open_campaign_dataset
    from raptorgrid.settings import get_settings

    settings = settings or get_settings()
    db = existing_database(settings)  # a clear error, and no empty file, when there is none
    try:
        with db.read() as session:
            return open_campaign_dataset(
                session=session, zarr_root=settings.zarr_root, campaign_id=campaign_id
            )
    finally:
        db.dispose()
