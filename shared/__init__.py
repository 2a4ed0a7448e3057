"""Common code of the memoryd services: wire schemas, bus, storage, settings, observability.

Nothing here imports a service package; services import from here.
"""

__version__ = "0.1.0"
