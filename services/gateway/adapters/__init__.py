"""What only the gateway talks to: the key bucket (through a cache) and the upstream LLM."""
