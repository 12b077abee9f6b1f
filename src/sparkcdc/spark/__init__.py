"""The Spark binding: Python data sources, stream readers, type mapping (imports pyspark)."""
