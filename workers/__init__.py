"""Task bodies: claim a run, build the system, solve, write Zarr and SQL.

Imported by Celery worker processes only (``include=["workers.tasks"]``); the service package
``raptorgrid`` never imports this package.
"""
