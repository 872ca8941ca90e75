// An echo agent built only from the official A2A JS SDK (@a2a-js/sdk 1.3.0), for
// `trident conformance` in interop/run.sh: JSON-RPC at /a2a/jsonrpc and HTTP+JSON under
// /a2a/rest on one express app, gRPC on a port of its own, the card at
// /.well-known/agent-card.json. Plain, every task completes with one artifact echoing the text
// (it does not follow the conformance script); with --script it follows the conformance script
// (docs/conformance-script.md) in front of the same echo, like interop/python/agent.py.
//
// Usage: node echo_agent.mjs [--script]   (free loopback ports; prints `agent card <url>` once
// serving; stops when stdin closes)
import express from 'express';
import * as grpc from '@grpc/grpc-js';
import { ContentTypeNotSupportedError } from '@a2a-js/sdk/errors';
import {
  DefaultRequestHandler,
  InMemoryTaskStore,
  InMemoryPushNotificationStore,
} from '@a2a-js/sdk/server';
import {
  agentCardHandler,
  jsonRpcHandler,
  restHandler,
  UserBuilder,
} from '@a2a-js/sdk/server/express';
import { A2AService, grpcService, UserBuilder as GrpcUserBuilder } from '@a2a-js/sdk/server/grpc';

const host = '127.0.0.1';
const script = process.argv.includes('--script');
// lf.a2a.v1 enum numbers (proto/lf/a2a/v1/a2a.proto).
const SUBMITTED = 1;
const WORKING = 2;
const COMPLETED = 3;
const FAILED = 4;
const CANCELED = 5;
const INPUT_REQUIRED = 6;
const REJECTED = 7;
const AUTH_REQUIRED = 8;
const ROLE_AGENT = 2;
// The conformance script's handshake and fixed texts (docs/conformance-script.md).
const SCRIPT_HANDSHAKE = 'conformance-script';
const SCRIPT_ANSWER = 'conformance-script 1';
const QUESTION = 'What is your name?';
const FAILURE = 'the demo agent was asked to fail';
const SLOW_MS = 60_000;

const textOf = (message) =>
  (message?.parts ?? [])
    .filter((p) => p.content?.$case === 'text')
    .map((p) => p.content.value)
    .join('\n');

const textPart = (value) => ({ content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: '' });

const agentMessage = (text, contextId, taskId = '') => ({
  messageId: crypto.randomUUID(),
  role: ROLE_AGENT,
  parts: [textPart(text)],
  contextId,
  taskId,
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
});

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Tasks whose `slow` or `stream` turn is running: cancelTask stops them through this.
const running = new Map();

function publishStatus(bus, taskId, contextId, state, message) {
  bus.publish({
    kind: 'statusUpdate',
    data: {
      taskId,
      contextId,
      status: { state, message, timestamp: new Date().toISOString() },
      metadata: undefined,
    },
  });
}

function publishArtifact(bus, taskId, contextId, artifactId, name, text, append, lastChunk) {
  bus.publish({
    kind: 'artifactUpdate',
    data: {
      taskId,
      contextId,
      artifact: { artifactId, name, description: '', parts: [textPart(text)], metadata: undefined, extensions: [] },
      append,
      lastChunk,
      metadata: undefined,
    },
  });
}

const executor = {
  async execute(ctx, bus) {
    const { taskId, contextId } = ctx;
    const text = textOf(ctx.userMessage);
    // The behaviour is chosen by the first word of the task's first user message.
    const firstText = ctx.task ? textOf(ctx.task.history?.find((m) => m.role !== ROLE_AGENT)) : text;
    const words = script ? firstText.split(/\s+/).filter(Boolean) : [];
    const verb = words[0] ?? '';
    if (verb === SCRIPT_HANDSHAKE && !ctx.task) {
      bus.publish({ kind: 'message', data: agentMessage(SCRIPT_ANSWER, contextId) });
      bus.finished();
      return;
    }
    if (verb === 'reply') {
      bus.publish({ kind: 'message', data: agentMessage(text, contextId) });
      bus.finished();
      return;
    }
    if (verb === 'refuse') {
      throw new ContentTypeNotSupportedError('the demo agent refuses this content');
    }
    const firstTurn = !ctx.task;
    if (firstTurn) {
      bus.publish({
        kind: 'task',
        data: {
          id: taskId,
          contextId,
          status: { state: SUBMITTED, message: undefined, timestamp: undefined },
          artifacts: [],
          history: [ctx.userMessage],
          metadata: undefined,
        },
      });
    } else {
      bus.publish({ kind: 'task', data: ctx.task });
    }
    const status = (state, message) =>
      publishStatus(bus, taskId, contextId, state, message && agentMessage(message, contextId, taskId));
    if (verb === 'input' && firstTurn) {
      status(INPUT_REQUIRED, QUESTION);
    } else if (verb === 'input') {
      publishArtifact(bus, taskId, contextId, 'greeting', 'greeting', `Hello, ${text}!`, false, true);
      status(COMPLETED);
    } else if (verb === 'auth' && firstTurn) {
      status(AUTH_REQUIRED, 'Please sign in');
    } else if (verb === 'slow' || verb === 'stream') {
      const turn = { canceled: false, contextId };
      running.set(taskId, turn);
      status(WORKING);
      if (verb === 'slow') {
        for (let waited = 0; waited < SLOW_MS && !turn.canceled; waited += 20) await sleep(20);
      } else {
        const chunks = /^\d+$/.test(words[1] ?? '') ? Number(words[1]) : 3;
        const pause = /^\d+$/.test(words[2] ?? '') ? Number(words[2]) : 2;
        for (let i = 0; i < chunks && !turn.canceled; i++) {
          await sleep(pause);
          if (turn.canceled) break;
          publishArtifact(bus, taskId, contextId, `${taskId}-stream`, 'stream', `chunk ${i} of ${text}`, i > 0, i + 1 === chunks);
        }
      }
      running.delete(taskId);
      if (turn.canceled) return; // cancelTask published CANCELED and finished the bus
      status(COMPLETED);
    } else if (verb === 'fail') {
      status(WORKING);
      status(FAILED, FAILURE);
    } else if (verb === 'reject') {
      status(REJECTED, 'I do not do that');
    } else {
      publishArtifact(bus, taskId, contextId, 'echo', 'echo', text, false, true);
      status(COMPLETED);
    }
    bus.finished();
  },
  async cancelTask(taskId, bus) {
    const turn = running.get(taskId);
    if (turn) turn.canceled = true;
    running.delete(taskId);
    publishStatus(bus, taskId, turn?.contextId ?? '', CANCELED, undefined);
    bus.finished();
  },
};

const grpcServer = new grpc.Server();
const grpcPort = await new Promise((resolve, reject) =>
  grpcServer.bindAsync(`${host}:0`, grpc.ServerCredentials.createInsecure(), (e, port) =>
    e ? reject(e) : resolve(port),
  ),
);
const app = express();
const http = app.listen(0, host);
await new Promise((resolve) => http.once('listening', resolve));
const origin = `http://${host}:${http.address().port}`;
const card = {
  name: script ? 'Conformance script (@a2a-js/sdk)' : 'Echo (@a2a-js/sdk)',
  description: 'An echo agent built with the official A2A JS SDK',
  version: '1.0.0',
  supportedInterfaces: [
    { url: `${origin}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: '' },
    { url: `${origin}/a2a/rest`, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0', tenant: '' },
    { url: `${host}:${grpcPort}`, protocolBinding: 'GRPC', protocolVersion: '1.0', tenant: '' },
  ],
  capabilities: { streaming: true, pushNotifications: true, extensions: [], extendedAgentCard: false },
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['text/plain'],
  skills: [{ id: 'echo', name: 'Echo', description: 'echoes', tags: ['echo'], examples: [], inputModes: [], outputModes: [], securityRequirements: [] }],
  securitySchemes: {},
  securityRequirements: [],
  signatures: [],
};
const handler = new DefaultRequestHandler(
  card,
  new InMemoryTaskStore(),
  executor,
  undefined,
  new InMemoryPushNotificationStore(),
);
app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler }));
app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
app.use('/a2a/rest', restHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
grpcServer.addService(
  A2AService,
  grpcService({ requestHandler: handler, userBuilder: GrpcUserBuilder.noAuthentication }),
);
console.log(`agent card ${origin}/.well-known/agent-card.json`);
process.stdin.resume();
process.stdin.on('end', () => {
  http.close();
  grpcServer.forceShutdown();
  process.exit(0);
});
