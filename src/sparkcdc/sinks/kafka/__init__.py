"""Kafka pipeline sink: each captured table's changes as messages, at-least-once."""
