"""``memoryd settings get [--owner O]`` and ``memoryd settings set KEY VALUE [--owner O]``.

VALUE is parsed as JSON when it is JSON (``true``, ``500``, ``"hybrid"``), else taken as a
string, so ``memoryd settings set strategy semantic`` and ``... set maxTokens 500`` both work.
Free-text settings (model names, URLs, API keys, collection names) take VALUE as written
(``null`` still clears one that may be empty), so ``embeddingApiKey 12345`` stays a string.
Engine settings (``embeddingSource``, ``vectorStore``, ``qdrantUrl``, ...) are global only;
API keys show as ``***``.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from memoryd.cli.commands_search import resolve_nats_url
from memoryd.client import MemoryClient
from shared.bus.rpc_client import call
from shared.observability.logging import configure
from shared.schemas.ops import SettingsGetRequest, SettingsPutRequest
from shared.settings.env import LogConfig
from shared.settings.memory import text_setting_names


def parse_value(text: str, key: str | None = None) -> Any:
    if key is not None and text != "null" and key in text_setting_names():
        return text
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


async def _run(args: argparse.Namespace) -> int:
    configure("cli", LogConfig(level="error", format="console"))
    client = await MemoryClient.connect(resolve_nats_url(args.nats_url, args.data_dir), timeout=args.timeout)
    try:
        if args.action == "get":
            result = await call(client.nc, "settings.get", SettingsGetRequest(owner=args.owner), timeout=args.timeout)
            width = max(len(k) for k in result.settings)
            for key in sorted(result.settings):
                print(f"{key:<{width}}  {json.dumps(result.settings[key])}  ({result.sources.get(key, 'default')})")
        else:
            req = SettingsPutRequest(owner=args.owner, values={args.key: parse_value(args.value, args.key)})
            result = await call(client.nc, "settings.put", req, timeout=args.timeout)
            scope = f"owner {args.owner}" if args.owner else "global"
            print(f"{args.key} = {json.dumps(result.settings[args.key])} ({scope})")
        return 0
    finally:
        await client.close()


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("settings", help="show or change runtime settings (global or per owner)")
    parser.add_argument("action", choices=("get", "set"))
    parser.add_argument("key", nargs="?")
    parser.add_argument("value", nargs="?")
    parser.add_argument("--owner", help="an owner's override (default: the global value)")
    parser.add_argument("--nats-url", help="NATS URL (default $MEMORYD_NATS_URL, else <data-dir>/runtime.json)")
    parser.add_argument("--data-dir", help="where `memoryd up` keeps runtime.json (default .memoryd)")
    parser.add_argument("--timeout", type=float, default=10.0)

    def func(args: argparse.Namespace) -> Any:
        if args.action == "set" and (args.key is None or args.value is None):
            parser.error("settings set needs KEY and VALUE")
        return _run(args)

    parser.set_defaults(func=func)
