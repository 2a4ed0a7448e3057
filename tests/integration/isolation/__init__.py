"""Tenant isolation and backpressure on the real stack (NATS + PostgreSQL + the embed model)."""
