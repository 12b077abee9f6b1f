"""Changelog serialisation formats (changelog-json, debezium-json); pure Python."""
