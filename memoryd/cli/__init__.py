"""The ``memoryd`` command line: ``up``, ``serve``, ``migrate`` and the client commands."""
