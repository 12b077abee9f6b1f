"""PostgreSQL connector: snapshot part."""
