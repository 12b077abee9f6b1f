"""YAML pipelines: one source, one sink, many tables (Flink CDC 3.x's pipeline model)."""
