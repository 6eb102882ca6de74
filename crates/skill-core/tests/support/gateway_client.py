"""Drive the core's MCP gateway with the Python `mcp` client, as an agent would, and report what
it saw as JSON on stdout; a person (the reviewer's token) decides the agent's requests over the
REST API meanwhile.

    python gateway_client.py <core root URL> <desk token> <reader token> <reviewer token>

The Rust test that runs this script makes the assertions; this script only observes.
"""

import asyncio
import json
import sys

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


def dump(model):
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def decide(root, reviewer, console_url, outcome):
    task = console_url.rstrip("/").rsplit("/", 1)[-1]
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {reviewer}"}, timeout=30) as http:
        approvals = (await http.get(f"{root}/api/v1/approvals", params={"task": task})).json()
        approval = approvals["items"][0]["id"]
        answer = await http.post(f"{root}/api/v1/approvals/{approval}:decide", json={"outcome": outcome})
        return answer.status_code


async def settle(client, request_id):
    for _ in range(200):
        status = dump(await client.call_tool("approval_status", {"requestId": request_id}))
        if status["structuredContent"]["status"] not in ("pending", "approved"):
            return status
        await asyncio.sleep(0.05)
    return status


async def main():
    root, desk, reader, reviewer = sys.argv[1:5]
    seen = {}
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {reader}"}, timeout=60) as http:
        async with Client(streamable_http_client(f"{root}/mcp", http_client=http)) as client:
            seen["reader_tools"] = [tool.name for tool in (await client.list_tools()).tools]
            seen["reader_write"] = dump(await client.call_tool("claim.send_reply", {"claim": "C-1", "comment": "x"}))
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {desk}"}, timeout=60) as http:
        async with Client(streamable_http_client(f"{root}/mcp", http_client=http)) as client:
            seen["desk_tools"] = [dump(tool) for tool in (await client.list_tools()).tools]
            seen["classify"] = dump(await client.call_tool("claim.classify", {"text": "My parcel arrived broken."}))
            pending = dump(await client.call_tool("claim.send_reply", {"claim": "C-21", "comment": "A new one is on its way."}))
            seen["pending"] = pending
            request = json.loads(pending["content"][0]["text"])
            seen["pending_request"] = request
            seen["decided"] = await decide(root, reviewer, request["consoleUrl"], "approved")
            seen["approved"] = await settle(client, request["requestId"])
            rejected = json.loads(dump(await client.call_tool("claim.send_reply", {"claim": "C-22", "comment": "No."}))["content"][0]["text"])
            seen["rejected_decided"] = await decide(root, reviewer, rejected["consoleUrl"], "rejected")
            seen["rejected"] = await settle(client, rejected["requestId"])
            seen["unknown_request"] = dump(await client.call_tool("approval_status", {"requestId": "nope"}))
    print(json.dumps(seen, ensure_ascii=False))


asyncio.run(main())
