// Drive a skill host with the TypeScript MCP SDK's client and report what it saw, as JSON on
// stdout (the same report as mcp_interop.py, with "py-" ids spelled "ts-"):
//
//     node mcp_interop.cjs stdio <host-binary>
//     node mcp_interop.cjs http <url-of-/mcp> <bearer-token>
//
// SKILL_TEST_NODE names the folder whose node_modules holds @modelcontextprotocol/sdk (cargo
// xtask setup installs it). The SDK's client checks every structuredContent against the tool's
// outputSchema itself; a failed check throws, and is reported as {"thrown": message}. The Rust
// test that runs this script makes the assertions.

"use strict";

const path = require("node:path");
const { createRequire } = require("node:module");

const peers = createRequire(path.join(process.env.SKILL_TEST_NODE || ".", "package.json"));
const { Client } = peers("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = peers("@modelcontextprotocol/sdk/client/stdio.js");
const { StreamableHTTPClientTransport } = peers("@modelcontextprotocol/sdk/client/streamableHttp.js");

async function call(client, name, args, meta) {
  const params = { name, arguments: args };
  if (meta) params._meta = meta;
  try {
    return await client.callTool(params);
  } catch (error) {
    return { thrown: String(error && error.message ? error.message : error) };
  }
}

async function observe(client) {
  const seen = {};
  seen.tools = (await client.listTools()).tools;
  seen.echo = await call(client, "echo", { text: "héllo ☕" }, { "skill/invocationId": "ts-1" });
  seen.whoami = await call(client, "whoami", {}, {
    "skill/invocationId": "ts-2",
    "skill/idempotencyKey": "key-ts-2",
    "skill/settings": { package: "demo", values: { tier: "gold" } },
  });
  seen.whoami_empty_meta = await call(client, "whoami", undefined, {
    "skill/invocationId": "",
    "skill/idempotencyKey": 5,
  });
  seen.refuse = await call(client, "refuse", { order: "A-1" });
  seen.bad_inputs = await call(client, "echo", { text: 7 });
  seen.unknown = await call(client, "nope", {});
  seen.cancel = await call(client, "orders.cancel", { order: "A-2" }, { "skill/idempotencyKey": "cancel-A-2" });
  return seen;
}

async function main() {
  const [mode, target, token] = process.argv.slice(2);
  const client = new Client({ name: "skill-interop", version: "1.0.0" });
  let transport;
  if (mode === "stdio") {
    transport = new StdioClientTransport({ command: target, args: ["serve", "mcp-stdio"], stderr: "ignore" });
  } else {
    const headers = { Authorization: `Bearer ${token}` };
    transport = new StreamableHTTPClientTransport(new URL(target), { requestInit: { headers } });
  }
  await client.connect(transport);
  const seen = await observe(client);
  seen.protocolVersion = transport.protocolVersion || null;
  await client.close();
  process.stdout.write(JSON.stringify(seen));
}

main().catch((error) => {
  process.stderr.write(`${error && error.stack ? error.stack : error}\n`);
  process.exit(1);
});
