"""Authorization: the role matrix against a real nats-server."""
