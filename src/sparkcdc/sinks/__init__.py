"""Pipeline sinks: where a pipeline writes each captured table's changes, exactly once."""
