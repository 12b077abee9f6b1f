"""Kafka for sparkcdc changelogs: Spark column codecs, a sink and changelog sources.

See docs/kafka.md. Everything here imports pyspark lazily or at module level of its own
submodule; the pure formats live in :mod:`sparkcdc.formats`.
"""
