"""NATS plumbing: connection, stream provisioning, the RPC layer and the pull-consumer loop."""
