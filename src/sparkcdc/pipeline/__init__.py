"""YAML pipeline definitions and the composer that turns them into Spark queries."""
