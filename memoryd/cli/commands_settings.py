"""``memoryd settings get [--owner O]`` and ``memoryd settings set KEY VALUE [--owner O]``.

VALUE is parsed as JSON when it is JSON (``true``, ``500``, ``"hybrid"``), else taken as a
string, so ``memoryd settings set strategy semantic`` and ``... set maxTokens 500`` both work.
Free-text settings (model names, URLs, API keys, collection names) take VALUE as written
(``null`` still clears one that may be empty), so ``embeddingApiKey 12345`` stays a string.
Engine settings (``embeddingSource``, ``vectorStore``, ``qdrantUrl``, ...) are global only;
API keys show as ``***``.
"""

from __future__ import annotations

import json
from typing import Any

import click

from memoryd.cli.common import (
    CONTEXT_SETTINGS,
    cells,
    json_option,
    nats_options,
    owner_option,
    print_table,
    print_wire,
    table,
    timeout_option,
    with_client,
)
from memoryd.client import MemoryClient
from memoryd.errors import ValidationFailed
from memoryd.rpc import call
from memoryd.schemas.ops import SettingsGetRequest, SettingsPutRequest

_OWNER_HELP = "an owner's override (default: the global value)"


def parse_value(text: str, key: str | None = None) -> Any:
    from shared.settings.memory import text_setting_names

    if key is not None and text != "null" and key in text_setting_names():
        return text
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


@click.group("settings", context_settings=CONTEXT_SETTINGS)
def settings() -> None:
    """Show or change runtime settings (global or per owner)."""


@settings.command("get", context_settings=CONTEXT_SETTINGS)
@click.argument("keys", nargs=-1, metavar="[KEY]...")
@owner_option(required=False, help_text=_OWNER_HELP)
@json_option("print the SettingsGetResult as JSON")
@timeout_option()
@nats_options
@with_client
async def get(
    client: MemoryClient, *, keys: tuple[str, ...], owner: str | None, as_json: bool, timeout: float, **_: Any
) -> int:
    """Show the effective settings and where each value comes from.

    Sources: the owner's override, the global value, or the default. Give KEYs to show only those.
    """
    result = await call(client.nc, "settings.get", SettingsGetRequest(owner=owner), timeout=timeout)
    unknown = sorted(set(keys) - set(result.settings))
    if unknown:
        raise ValidationFailed(f"unknown setting(s): {', '.join(unknown)}")
    if as_json:
        print_wire(result)
        return 0
    rows = table("key", "value", "source")
    for key in sorted(keys or result.settings):
        rows.add_row(*cells(key, json.dumps(result.settings[key]), result.sources.get(key, "default")))
    print_table(rows)
    return 0


@settings.command("set", context_settings=CONTEXT_SETTINGS)
@click.argument("key")
@click.argument("value")
@owner_option(required=False, help_text=_OWNER_HELP)
@timeout_option()
@nats_options
@with_client
async def set_(client: MemoryClient, *, owner: str | None, key: str, value: str, timeout: float, **_: Any) -> int:
    """Set KEY to VALUE (JSON when it parses as JSON, else a string)."""
    req = SettingsPutRequest(owner=owner, values={key: parse_value(value, key)})
    result = await call(client.nc, "settings.put", req, timeout=timeout)
    scope = f"owner {owner}" if owner else "global"
    print(f"{key} = {json.dumps(result.settings[key])} ({scope})")
    return 0


COMMANDS = (settings,)
