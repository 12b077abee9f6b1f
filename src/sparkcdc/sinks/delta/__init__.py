"""Delta Lake sink: each captured table into its own Delta table, exactly once."""
