"""The example database of kubesim's Hypothesis tests, named by a URL.

``redis://host:port/db`` for ``hypothesis.extra.redis.RedisExampleDatabase`` (a fleet of
machines sharing one), a directory, or ``:memory:`` (none). ``kubesim check --database``,
the fuzz targets of :mod:`kubesim.testing.fuzz` and the pytest plugin all open it here.
"""

from __future__ import annotations

from hypothesis import settings
from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase

DATABASE_VARIABLE = "KUBESIM_DATABASE"
PROFILE = "kubesim-database"


def example_database(url: str) -> ExampleDatabase | None:
    """The example database ``url`` names: ``redis://host:port/db`` (needs the ``redis``
    package), ``:memory:`` (none), or a directory. One instance per URL and process: Hypothesis
    compares databases by identity (HypoFuzz fuzzes only tests whose database is the
    profile's)."""
    if url not in _DATABASES:
        _DATABASES[url] = _open_database(url)
    return _DATABASES[url]


_DATABASES: dict[str, ExampleDatabase | None] = {}


def _open_database(url: str) -> ExampleDatabase | None:
    if url == ":memory:":
        return None
    if url.startswith(("redis://", "rediss://", "unix://")):
        try:
            import redis
            from hypothesis.extra.redis import RedisExampleDatabase
        except ImportError as exc:
            raise ValueError(
                f"example database {url!r}: the redis package is not installed (pip install redis)"
            ) from exc
        return RedisExampleDatabase(redis.Redis.from_url(url))
    return DirectoryBasedExampleDatabase(url)


def use_database(url: str) -> ExampleDatabase | None:
    """Make ``url`` (see :func:`example_database`) the example database of every Hypothesis
    test from now on: a settings profile, ``kubesim-database``, loaded over the current one."""
    database = example_database(url)
    settings.register_profile(PROFILE, parent=settings.default, database=database)
    settings.load_profile(PROFILE)
    return database
