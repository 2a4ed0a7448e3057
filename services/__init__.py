"""memoryd services: one sub-package per service; they talk only over NATS."""
