// Interop checks: the official A2A **v0.3** JS SDK (@a2a-js/sdk 0.3.14) against a running Trident
// server's v0.3 compatibility layer over all three of its transports: JSON-RPC, HTTP+JSON and gRPC
// (`@a2a-js/sdk/client/grpc`, with its peers @grpc/grpc-js and @bufbuild/protobuf pinned in
// package.json), each built from the URL the card's `additionalInterfaces` gives for it.
// Usage: node interop_v03.mjs http://127.0.0.1:PORT [--label NAME]. Last line: `js03 subtotal
// passed=N failed=M` (INTEROP_SUBTOTAL=1) or `interop: N passed, M failed`; `--label` replaces
// `js03` in every line (interop/run.sh also runs this against `trident gateway` in front of a
// 1.0-only agent).
import { randomUUID } from "node:crypto";
import { ClientFactory, DefaultAgentCardResolver, JsonRpcTransport, RestTransport } from "@a2a-js/sdk/client";
import { GrpcTransport } from "@a2a-js/sdk/client/grpc";

const base = process.argv[2].replace(/\/$/, "");
const label = process.argv[3] === "--label" && process.argv[4] ? process.argv[4] : "js03";
let passed = 0;
let failed = 0;

async function check(name, fn) {
  try {
    await Promise.race([
      fn(),
      new Promise((_, reject) => setTimeout(() => reject(new Error("timeout")), 30000)),
    ]);
    passed++;
    console.log(`ok   ${label} ${name}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${label} ${name}: ${e?.stack ?? e}`);
  }
}

function assert(ok, why) {
  if (!ok) throw new Error(why);
}

const user = (text, extra = {}) => ({
  kind: "message",
  messageId: randomUUID(),
  role: "user",
  parts: [{ kind: "text", text }],
  ...extra,
});

async function firstTaskId(stream) {
  for await (const event of stream) {
    if (event.kind === "task") return event.id;
    if (event.taskId) return event.taskId;
  }
  throw new Error("no task in the stream");
}

// The card as the SDK's own resolver fetches it (no A2A-Version: the server answers v0.3's form).
const card = await new DefaultAgentCardResolver().resolve(`${base}/`);
await check("card (v0.3 members)", async () => {
  assert(card.protocolVersion === "0.3.0", `protocolVersion ${card.protocolVersion}`);
  assert(typeof card.url === "string" && card.preferredTransport === "JSONRPC", "url/preferredTransport");
});
await check("client-from-card", async () => {
  const client = await new ClientFactory().createFromUrl(`${base}/`);
  const task = await client.sendMessage({ message: user("hello factory"), configuration: { blocking: true } });
  assert(task.kind === "task" && task.status.state === "completed", JSON.stringify(task));
});

const byTransport = Object.fromEntries(
  (card.additionalInterfaces ?? []).map((i) => [i.transport, i.url]),
);
for (const [tag, transport] of [
  ["jsonrpc", new JsonRpcTransport({ endpoint: byTransport.JSONRPC })],
  ["rest", new RestTransport({ endpoint: byTransport["HTTP+JSON"] })],
  ["grpc", new GrpcTransport({ endpoint: byTransport.GRPC })],
]) {
  await check(`${tag} send-blocking`, async () => {
    const task = await transport.sendMessage({ message: user("hello js"), configuration: { blocking: true } });
    assert(task.kind === "task" && task.status.state === "completed", JSON.stringify(task));
    assert(task.artifacts[0].parts[0].text === "hello js", JSON.stringify(task.artifacts));
  });
  await check(`${tag} send-streaming`, async () => {
    const kinds = [];
    let last;
    for await (const event of transport.sendMessageStream({ message: user("stream 2 1") })) {
      kinds.push(event.kind);
      last = event;
    }
    assert(kinds.includes("artifact-update"), kinds.join());
    assert(last.kind === "status-update" && last.final === true && last.status.state === "completed", JSON.stringify(last));
  });
  await check(`${tag} get-with-history`, async () => {
    const task = await transport.sendMessage({ message: user("history"), configuration: { blocking: true } });
    const got = await transport.getTask({ id: task.id, historyLength: 1 });
    assert(got.id === task.id && got.history.length === 1, JSON.stringify(got.history));
  });
  await check(`${tag} cancel-and-resubscribe`, async () => {
    const id = await firstTaskId(transport.sendMessageStream({ message: user("slow") }));
    let seen;
    for await (const event of transport.resubscribeTask({ id })) {
      seen = event;
      break;
    }
    assert(seen, "no event on resubscribe");
    const canceled = await transport.cancelTask({ id });
    assert(canceled.status.state === "canceled", canceled.status.state);
  });
  await check(`${tag} push-config-crud`, async () => {
    const task = await transport.sendMessage({ message: user("input"), configuration: { blocking: true } });
    const config = { id: "c-1", url: "https://client.example.com/hook" };
    const made = await transport.setTaskPushNotificationConfig({ taskId: task.id, pushNotificationConfig: config });
    assert(made.pushNotificationConfig.url === config.url, JSON.stringify(made));
    const got = await transport.getTaskPushNotificationConfig({ id: task.id, pushNotificationConfigId: "c-1" });
    assert(got.pushNotificationConfig.id === "c-1", JSON.stringify(got));
    const listed = await transport.listTaskPushNotificationConfig({ id: task.id });
    assert(listed.length === 1, JSON.stringify(listed));
    await transport.deleteTaskPushNotificationConfig({ id: task.id, pushNotificationConfigId: "c-1" });
    const after = await transport.listTaskPushNotificationConfig({ id: task.id });
    assert(after.length === 0, JSON.stringify(after));
  });
  await check(`${tag} error-task-not-found`, async () => {
    try {
      await transport.getTask({ id: "no-such-task" });
    } catch (e) {
      assert(/not found|-32001|404|NOT_FOUND/i.test(String(e?.message ?? e)) || e?.constructor?.name === "TaskNotFoundError", String(e));
      return;
    }
    throw new Error("no error for an unknown task");
  });
}

if (process.env.INTEROP_SUBTOTAL) console.log(`${label} subtotal passed=${passed} failed=${failed}`);
else console.log(`interop: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
