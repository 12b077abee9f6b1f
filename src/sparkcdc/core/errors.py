"""Errors a user can act on. Messages name the option, setting or object and the fix."""

from __future__ import annotations


class SparkCdcError(Exception):
    """Base class of every error sparkcdc raises on purpose."""


class OptionError(SparkCdcError, ValueError):
    """An option is unknown, missing or has an invalid value."""


class SourceConfigurationError(SparkCdcError):
    """The source database is not set up for CDC (binlog off, wrong format, privileges...)."""


class SchemaError(SparkCdcError):
    """A captured table cannot be captured as it is (no primary key, unsupported type...)."""


class SourceUnavailableError(SparkCdcError):
    """A read's connection retries are spent: the server is down or keeps dropping it."""


class PositionLostError(SparkCdcError):
    """A recorded log position no longer exists on the server (binlog purged)."""

    #: What was lost, without the way out (:func:`lost_log`).
    what: str | None = None


#: Where a message names the pipeline's file; a pipeline run puts its own path there.
PIPELINE_FILE = "<pipeline file>"

#: What to do when the log from a stream's position is gone (docs/design.md, "A lost log").
LOST_LOG_WAY_OUT = (
    "To go on without a new checkpoint, read again the tables the lost changes can have "
    f"touched: for a pipeline, run `sparkcdc recover {PIPELINE_FILE}`, then run the pipeline "
    "again (their targets are emptied and filled again; the other tables go on); for a "
    "stream of your own, append a `recover-lost-log` signal to its `signal.file` "
    "(docs/signals.md). Or start from a new checkpoint (a new snapshot of every table)"
)


def lost_log(what: str) -> PositionLostError:
    """The error for a stream whose log from its position is gone: ``what`` was lost, and
    the way out."""
    error = PositionLostError(f"{what}. {LOST_LOG_WAY_OUT}")
    error.what = what
    return error


#: Starts the message of :class:`RestartForSchemaError`: how a pipeline runner recognises
#: it in the error Spark reports (it arrives as text through the JVM).
RESTART_FOR_SCHEMA = "[sparkcdc: restart for schema change]"


class RestartForSchemaError(SchemaError):
    """A one-table stream reached rows whose columns differ from the stream's, which a
    Spark query cannot change: the query stops at them, and a restarted query continues
    there with the new columns (the convention of Delta's streaming source)."""

    def __init__(self, detail: str) -> None:
        super().__init__(f"{RESTART_FOR_SCHEMA} {detail}")


class ChunkCrossedChange(SchemaError):
    """A chunk's table changed its columns between its batch's end and the chunk's read, so
    the chunk cannot be read in the batch's shape. Its partition emits nothing for it; the
    change's own batch reads its key range again (snapshot/progress.py, ``ChunkSpan``)."""
