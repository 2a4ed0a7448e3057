"""Who may do what through the gateway: bearer parsing and the owner a request acts for.

An owner key acts only for its owner: naming another one anywhere (query, header, body) is 403
whatever else the request says. An operator key names the owner per call; naming two different
owners in one request is 400.
"""

from __future__ import annotations

from collections.abc import Iterable

from memoryd.errors import Forbidden, Unauthorized, ValidationFailed

OWNER_HEADER = "x-memory-owner"

__all__ = ["OWNER_HEADER", "Unauthorized", "acting_owner", "bearer_token", "require_operator"]


def bearer_token(authorization: str | None, api_key_header: str | None = None) -> str | None:
    """The key of ``Authorization: Bearer <key>`` (or of an ``x-api-key`` header)."""
    if authorization:
        scheme, _, token = authorization.strip().partition(" ")
        if scheme.lower() == "bearer" and token.strip():
            return token.strip()
    if api_key_header and api_key_header.strip():
        return api_key_header.strip()
    return None


def acting_owner(role: str, key_owner: str | None, named: Iterable[str | None], *, required: bool) -> str | None:
    """The owner this request acts for, given every owner the request names."""
    given = {o for o in named if o is not None and o != ""}
    if role != "operator":
        others = given - {key_owner}
        if others:
            raise Forbidden(f"this API key acts for owner {key_owner!r}, not {sorted(others)[0]!r}")
        return key_owner
    if len(given) > 1:
        raise ValidationFailed.at("$.owner", f"the request names several owners: {sorted(given)}")
    if not given:
        if required:
            raise ValidationFailed.at(
                "$.owner", "an operator key names the owner (?owner=, the x-memory-owner header or the body's owner)"
            )
        return None
    return given.pop()


def require_operator(role: str, what: str) -> None:
    if role != "operator":
        raise Forbidden(f"{what} needs an operator key")
