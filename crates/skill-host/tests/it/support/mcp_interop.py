"""Drive a skill host with the Python `mcp` client and report what it saw, as JSON on stdout.

    python mcp_interop.py stdio <host-binary>
    python mcp_interop.py http <url-of-/mcp> <bearer-token>

The Rust test that runs this script makes the assertions; this script only observes.
"""

import asyncio
import json
import sys

import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client


def dump(model):
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def observe(client):
    seen = {}
    tools = await client.list_tools()
    seen["tools"] = [dump(tool) for tool in tools.tools]
    seen["echo"] = dump(await client.call_tool("echo", {"text": "héllo ☕"}, meta={"skill/invocationId": "py-1"}))
    seen["whoami"] = dump(
        await client.call_tool(
            "whoami",
            {},
            meta={
                "skill/invocationId": "py-2",
                "skill/idempotencyKey": "key-py-2",
                "skill/settings": {"package": "demo", "values": {"tier": "gold"}},
            },
        )
    )
    seen["whoami_empty_meta"] = dump(
        await client.call_tool("whoami", None, meta={"skill/invocationId": "", "skill/idempotencyKey": 5})
    )
    seen["refuse"] = dump(await client.call_tool("refuse", {"order": "A-1"}))
    seen["bad_inputs"] = dump(await client.call_tool("echo", {"text": 7}))
    seen["unknown"] = dump(await client.call_tool("nope", {}))
    seen["cancel"] = dump(
        await client.call_tool("orders.cancel", {"order": "A-2"}, meta={"skill/idempotencyKey": "cancel-A-2"})
    )
    return seen


async def main():
    mode = sys.argv[1]
    if mode == "stdio":
        server = StdioServerParameters(command=sys.argv[2], args=["serve", "mcp-stdio"])
        async with Client(server) as client:
            seen = await observe(client)
    else:
        url, token = sys.argv[2], sys.argv[3]
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
            async with Client(streamable_http_client(url, http_client=http)) as client:
                seen = await observe(client)
        async with httpx2.AsyncClient(timeout=30) as anonymous:
            body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
            response = await anonymous.post(
                url, json=body, headers={"Accept": "application/json, text/event-stream"}
            )
            seen["no_token"] = {
                "status": response.status_code,
                "body": response.json(),
                "www_authenticate": response.headers.get("www-authenticate"),
            }
    print(json.dumps(seen, ensure_ascii=False))


asyncio.run(main())
