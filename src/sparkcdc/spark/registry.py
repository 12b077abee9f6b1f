"""The list of data sources that ``sparkcdc.register`` installs on a SparkSession."""

from __future__ import annotations

from typing import Any

from sparkcdc.spark.mysql_source import MySqlCdcDataSource

DATA_SOURCES: tuple[type[Any], ...] = (MySqlCdcDataSource,)
