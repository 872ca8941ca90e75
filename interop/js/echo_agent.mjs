// An echo agent built only from the official A2A JS SDK (@a2a-js/sdk 1.3.0), for
// `trident conformance` in interop/run.sh: JSON-RPC at /a2a/jsonrpc and HTTP+JSON under
// /a2a/rest on one express app, gRPC on a port of its own, the card at
// /.well-known/agent-card.json. Every task completes with one artifact echoing the text; it
// does not follow the conformance script.
//
// Usage: node echo_agent.mjs   (free loopback ports; prints `agent card <url>` once serving;
// stops when stdin closes)
import express from 'express';
import * as grpc from '@grpc/grpc-js';
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
const TASK_STATE_SUBMITTED = 1;
const TASK_STATE_COMPLETED = 3;

const textOf = (message) =>
  (message?.parts ?? [])
    .filter((p) => p.content?.$case === 'text')
    .map((p) => p.content.value)
    .join('\n');

const executor = {
  async execute(ctx, bus) {
    const { taskId, contextId } = ctx;
    if (!ctx.task) {
      bus.publish({
        kind: 'task',
        data: {
          id: taskId,
          contextId,
          status: { state: TASK_STATE_SUBMITTED, message: undefined, timestamp: undefined },
          artifacts: [],
          history: [ctx.userMessage],
          metadata: undefined,
        },
      });
    } else {
      bus.publish({ kind: 'task', data: ctx.task });
    }
    bus.publish({
      kind: 'artifactUpdate',
      data: {
        taskId,
        contextId,
        artifact: {
          artifactId: 'echo',
          name: 'echo',
          description: '',
          parts: [{ content: { $case: 'text', value: textOf(ctx.userMessage) }, metadata: undefined, filename: '', mediaType: '' }],
          metadata: undefined,
          extensions: [],
        },
        append: false,
        lastChunk: true,
        metadata: undefined,
      },
    });
    bus.publish({
      kind: 'statusUpdate',
      data: {
        taskId,
        contextId,
        status: { state: TASK_STATE_COMPLETED, message: undefined, timestamp: new Date().toISOString() },
        metadata: undefined,
      },
    });
    bus.finished();
  },
  async cancelTask(taskId, bus) {
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
  name: 'Echo (@a2a-js/sdk)',
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
