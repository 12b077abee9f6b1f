"""PostgreSQL connector: server part."""
