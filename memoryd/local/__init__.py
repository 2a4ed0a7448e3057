"""Embedded servers for one-machine use and tests: nats-server and PostgreSQL from wheels."""
