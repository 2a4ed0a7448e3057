"""Common code of the memoryd services: bus, storage, settings, observability, secrets.

Nothing here imports a service package; services import from here.
"""
