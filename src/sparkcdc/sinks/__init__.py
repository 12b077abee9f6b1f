"""Sinks: Delta Lake, JDBC, Kafka, console."""
