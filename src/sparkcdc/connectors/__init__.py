"""Database dialect plug-ins; drivers are imported lazily inside methods."""
