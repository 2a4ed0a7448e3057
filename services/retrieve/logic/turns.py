"""How far apart two chat turns of a session the neighbour boost tells apart.

The boost only needs how far apart two candidates of one session are, up to
``MAX_DISTANCE`` turns: ``tiers.fetch_rows`` numbers the candidates so that the differences
of their positions are exact up to ``MAX_DISTANCE`` and larger beyond (see ``_rows_sql``).
"""

from __future__ import annotations

#: How far the neighbour boost reaches (``fusion.neighbour_boost``'s default weights: ±1, ±2).
MAX_DISTANCE = 2
