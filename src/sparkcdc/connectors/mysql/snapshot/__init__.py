"""The snapshot part of the MySQL/MariaDB connector.

Chunk ends, key order (collations), and the two chunk readers, which share one
consistent-snapshot recipe (consistent.py).
"""
