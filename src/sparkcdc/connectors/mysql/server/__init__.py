"""The server part of the MySQL/MariaDB connector.

Connections, up-front validation, table discovery, identifier quoting and the type mapping.
"""
