"""Arrow schema -> Spark schema."""

from __future__ import annotations

from typing import Any

import pyarrow as pa


def to_spark_schema(schema: pa.Schema) -> Any:
    """The Spark StructType for an Arrow schema (DATETIME -> TIMESTAMP_NTZ etc.)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(schema)
