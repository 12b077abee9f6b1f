"""MySQL / MariaDB dialect: discovery, validation, chunk reads and binlog reads."""
