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


class PositionLostError(SparkCdcError):
    """A recorded log position no longer exists on the server (binlog purged)."""
