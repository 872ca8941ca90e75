// The page tests/it/browser.rs loads in headless Chromium (bundled by esbuild into
// bundle.js). It calls the agent named by `?agent=http://127.0.0.1:PORT` directly, from the
// page's own origin: JSON-RPC and HTTP+JSON with fetch, gRPC-Web with two real clients
// (Connect's gRPC-Web transport, binary `application/grpc-web+proto`; Google's grpc-web,
// `application/grpc-web-text`). The A2A messages are built at run time from the agent's own
// descriptors (`descriptors.bin`, served beside the page), so there is no generated code.
// Each check's outcome, `{ ok: … }` or `{ error, code }`, is written as JSON into
// <pre id="results">, and `window.done` resolves once all are there.

import { createFileRegistry, fromBinary, fromJson, toBinary, toJson } from "@bufbuild/protobuf";
import { FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import { createClient } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { GrpcWebClientBase, MethodDescriptor, MethodType } from "grpc-web";

const SERVICE = "lf.a2a.v1.A2AService";
const agent = new URLSearchParams(location.search).get("agent");
const results = {};

async function check(name, run) {
  try {
    results[name] = { ok: await run() };
  } catch (e) {
    results[name] = { error: String(e?.message ?? e), code: e?.code ?? null };
  }
}

function userMessage(id, text) {
  return { message: { messageId: id, role: "ROLE_USER", parts: [{ text }] } };
}

/// What the checks compare: a task's state and its first artifact's text.
function summary(task) {
  return {
    state: task.status?.state ?? null,
    text: task.artifacts?.[0]?.parts?.[0]?.text ?? null,
    id: task.id,
  };
}

/// The kind of a StreamResponse in ProtoJSON, with the state for status updates.
function eventKind(json) {
  if (json.task) return "task";
  if (json.message) return "message";
  if (json.artifactUpdate) return "artifactUpdate";
  if (json.statusUpdate) return `statusUpdate:${json.statusUpdate.status?.state}`;
  return Object.keys(json).join(",");
}

async function run() {
  await check("jsonrpc", async () => {
    const response = await fetch(`${agent}/`, {
      method: "POST",
      headers: { "Content-Type": "application/json", "A2A-Version": "1.0" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "SendMessage",
        params: userMessage("browser-jsonrpc", "hello from jsonrpc"),
      }),
    });
    const body = await response.json();
    if (!body.result) throw new Error(`JSON-RPC error: ${JSON.stringify(body.error)}`);
    return summary(body.result.task);
  });

  await check("rest", async () => {
    const sent = await fetch(`${agent}/message:send`, {
      method: "POST",
      headers: { "Content-Type": "application/json", "A2A-Version": "1.0" },
      body: JSON.stringify(userMessage("browser-rest", "hello from rest")),
    });
    if (!sent.ok) throw new Error(`message:send: HTTP ${sent.status}`);
    const { task } = await sent.json();
    const got = await fetch(`${agent}/tasks/${encodeURIComponent(task.id)}`, {
      headers: { "A2A-Version": "1.0" },
    });
    if (!got.ok) throw new Error(`GET task: HTTP ${got.status}`);
    const fetched = summary(await got.json());
    return { sent: summary(task), fetched, same: fetched.id === task.id };
  });

  // The descriptors come from the page's own origin, so they load in every scenario.
  const bytes = new Uint8Array(await (await fetch("descriptors.bin")).arrayBuffer());
  const registry = createFileRegistry(fromBinary(FileDescriptorSetSchema, bytes));
  const schema = (name) => registry.getMessage(`lf.a2a.v1.${name}`);
  const request = (name, json) => fromJson(schema(name), json, { registry });
  const json = (name, message) => toJson(schema(name), message, { registry });

  const connect = createClient(
    registry.getService(SERVICE),
    createGrpcWebTransport({ baseUrl: agent, useBinaryFormat: true }),
  );
  const headers = { "a2a-version": "1.0" };

  await check("grpcweb_unary", async () => {
    const answer = await connect.sendMessage(
      request("SendMessageRequest", userMessage("browser-grpcweb", "hello from grpc-web")),
      { headers },
    );
    return summary(json("SendMessageResponse", answer).task);
  });

  await check("grpcweb_stream", async () => {
    const kinds = [];
    const texts = [];
    const stream = connect.sendStreamingMessage(
      request("SendMessageRequest", userMessage("browser-stream", "stream 3 1")),
      { headers },
    );
    for await (const event of stream) {
      const e = json("StreamResponse", event);
      kinds.push(eventKind(e));
      for (const part of e.artifactUpdate?.artifact?.parts ?? []) texts.push(part.text);
    }
    return { kinds, texts };
  });

  await check("grpcweb_error", async () => {
    await connect.getTask(request("GetTaskRequest", { id: "no-such-task" }), { headers });
    return "no error";
  });

  // Google's grpc-web, in its default text mode (base64 bodies).
  const google = new GrpcWebClientBase({ format: "text" });
  const descriptor = (method, type, req, resp) =>
    new MethodDescriptor(
      `/${SERVICE}/${method}`,
      type,
      Object,
      Object,
      (message) => toBinary(schema(req), message),
      (data) => fromBinary(schema(resp), data),
    );

  await check("grpcwebtext_unary", async () => {
    const answer = await google.unaryCall(
      `${agent}/${SERVICE}/SendMessage`,
      request("SendMessageRequest", userMessage("browser-text", "hello from grpc-web-text")),
      headers,
      descriptor("SendMessage", MethodType.UNARY, "SendMessageRequest", "SendMessageResponse"),
    );
    return summary(json("SendMessageResponse", answer).task);
  });

  await check("grpcwebtext_stream", () =>
    new Promise((resolve, reject) => {
      const kinds = [];
      const stream = google.serverStreaming(
        `${agent}/${SERVICE}/SendStreamingMessage`,
        request("SendMessageRequest", userMessage("browser-text-stream", "stream 2 1")),
        headers,
        descriptor(
          "SendStreamingMessage",
          MethodType.SERVER_STREAMING,
          "SendMessageRequest",
          "StreamResponse",
        ),
      );
      stream.on("data", (event) => kinds.push(eventKind(json("StreamResponse", event))));
      stream.on("error", (e) => reject(e));
      stream.on("end", () => resolve({ kinds }));
    }),
  );

  await check("grpcwebtext_error", async () => {
    await google.unaryCall(
      `${agent}/${SERVICE}/GetTask`,
      request("GetTaskRequest", { id: "no-such-task" }),
      headers,
      descriptor("GetTask", MethodType.UNARY, "GetTaskRequest", "Task"),
    );
    return "no error";
  });
}

window.done = run()
  .catch((e) => {
    results.page = { error: String(e?.message ?? e) };
  })
  .then(() => {
    document.getElementById("results").textContent = JSON.stringify(results);
    return true;
  });
