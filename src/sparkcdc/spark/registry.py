"""The list of data sources that ``sparkcdc.register`` installs on a SparkSession."""

from __future__ import annotations

from typing import Any

#: Filled as data sources are added; each entry is a ``pyspark.sql.datasource.DataSource``.
DATA_SOURCES: tuple[type[Any], ...] = ()
