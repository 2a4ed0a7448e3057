"""Gateway tests: real HTTP clients against uvicorn on a free port, in front of real services."""
