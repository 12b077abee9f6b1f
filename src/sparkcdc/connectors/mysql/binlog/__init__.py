"""The binlog part of the MySQL/MariaDB connector.

Positions and GTIDs, the log reader and its compiled row decoder, read limits and the cuts
that split a log range into pieces decoded in parallel.
"""
