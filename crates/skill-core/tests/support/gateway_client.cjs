// Drive the core's MCP gateway with the TypeScript MCP SDK's client, as an agent would, and
// report what it saw as JSON on stdout; a person (the reviewer's token) decides the agent's
// request over the REST API meanwhile:
//
//     node gateway_client.cjs <core root URL> <desk token> <reader token> <reviewer token>
//
// SKILL_TEST_NODE names the folder whose node_modules holds @modelcontextprotocol/sdk. The SDK's
// client checks every structuredContent against the tool's outputSchema itself. The Rust test
// that runs this script makes the assertions.

"use strict";

const path = require("node:path");
const { createRequire } = require("node:module");

const peers = createRequire(path.join(process.env.SKILL_TEST_NODE || ".", "package.json"));
const { Client } = peers("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = peers("@modelcontextprotocol/sdk/client/streamableHttp.js");

async function connect(root, token) {
  const client = new Client({ name: "gateway-ts", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(`${root}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  return client;
}

async function call(client, name, args) {
  try {
    return await client.callTool({ name, arguments: args });
  } catch (error) {
    return { thrown: String(error && error.message ? error.message : error) };
  }
}

async function decide(root, reviewer, consoleUrl, outcome) {
  const task = consoleUrl.replace(/\/$/, "").split("/").pop();
  const auth = { Authorization: `Bearer ${reviewer}`, "Content-Type": "application/json" };
  const approvals = await (await fetch(`${root}/api/v1/approvals?task=${task}`, { headers: auth })).json();
  const id = approvals.items[0].id;
  const answer = await fetch(`${root}/api/v1/approvals/${id}:decide`, {
    method: "POST",
    headers: auth,
    body: JSON.stringify({ outcome }),
  });
  return answer.status;
}

// One write run as a task: every message the SDK's stream yields; once the task exists, a
// person decides it (its status message names the console page) and tasks/get is asked too.
async function stream(client, root, reviewer, args, outcome) {
  const messages = [];
  for await (const message of client.experimental.tasks.callToolStream({ name: "claim.send_reply", arguments: args })) {
    if (message.type === "error") {
      messages.push({ type: "error", error: String(message.error && message.error.message) });
      continue;
    }
    messages.push(message);
    if (message.type === "taskCreated") {
      const consoleUrl = message.task.statusMessage.split(": ").pop();
      messages.push({ type: "decided", status: await decide(root, reviewer, consoleUrl, outcome) });
      messages.push({ type: "got", task: await client.experimental.tasks.getTask(message.task.taskId) });
    }
  }
  return messages;
}

async function main() {
  const [root, desk, reader, reviewer] = process.argv.slice(2);
  const seen = {};
  const readerClient = await connect(root, reader);
  seen.readerTools = (await readerClient.listTools()).tools.map((tool) => tool.name);
  await readerClient.close();
  const client = await connect(root, desk);
  seen.deskTools = (await client.listTools()).tools.map((tool) => tool.name);
  seen.classify = await call(client, "claim.classify", { text: "The courier never came." });
  seen.pending = await call(client, "claim.send_reply", { claim: "C-41", comment: "Sent from TypeScript." });
  const request = JSON.parse(seen.pending.content[0].text);
  seen.request = request;
  seen.decided = await decide(root, reviewer, request.consoleUrl, "approved");
  for (let i = 0; i < 200; i++) {
    seen.status = await call(client, "approval_status", { requestId: request.requestId });
    if (!["pending", "approved"].includes(seen.status.structuredContent.status)) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  // The 2025-11-25 revision's tasks: the server declares them, the write is marked, so the SDK
  // runs it as a task — tasks/get while a person decides, then tasks/result.
  seen.serverTasks = client.getServerCapabilities().tasks || null;
  const listed = (await client.listTools()).tools.find((tool) => tool.name === "claim.send_reply");
  seen.execution = listed.execution || null;
  seen.approvedTask = await stream(client, root, reviewer, { claim: "C-42", comment: "Sent as a task." }, "approved");
  seen.rejectedTask = await stream(client, root, reviewer, { claim: "C-43", comment: "Never sent." }, "rejected");
  // A task withdrawn before anyone decided it.
  const asked = client.experimental.tasks.callToolStream({
    name: "claim.send_reply",
    arguments: { claim: "C-44", comment: "Withdrawn." },
  });
  const created = (await asked.next()).value;
  seen.cancelled = await client.experimental.tasks.cancelTask(created.task.taskId);
  seen.afterCancel = await client.experimental.tasks.getTask(created.task.taskId);
  await asked.return();
  await client.close();
  process.stdout.write(JSON.stringify(seen));
}

main().catch((error) => {
  process.stderr.write(String(error && error.stack ? error.stack : error));
  process.exit(1);
});
