// The official A2A JS SDK's echo agent (@a2a-js/sdk 1.3.0), a peer of `trident-bench peers`:
// JSON-RPC at POST /jsonrpc and HTTP+JSON at the root of one express app, gRPC (@grpc/grpc-js)
// on a port of its own, in one node process. Every task completes with one artifact `echo`
// holding the user's text, like Trident's echo agent.
//
// Usage: node echo.mjs   (free loopback ports; prints `listening on HOST:PORT grpc HOST:PORT`
// once serving; stops on SIGTERM)
import express from 'express';
import * as grpc from '@grpc/grpc-js';
import { DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { jsonRpcHandler, restHandler, UserBuilder } from '@a2a-js/sdk/server/express';
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
    bus.publish({
      kind: 'task',
      data: ctx.task ?? {
        id: taskId,
        contextId,
        status: { state: TASK_STATE_SUBMITTED, message: undefined, timestamp: undefined },
        artifacts: [],
        history: [ctx.userMessage],
        metadata: undefined,
      },
    });
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
    { url: `${origin}/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: '' },
    { url: origin, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0', tenant: '' },
    { url: `${host}:${grpcPort}`, protocolBinding: 'GRPC', protocolVersion: '1.0', tenant: '' },
  ],
  capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['text/plain'],
  skills: [{ id: 'echo', name: 'Echo', description: 'echoes', tags: ['echo'], examples: [], inputModes: [], outputModes: [], securityRequirements: [] }],
  securitySchemes: {},
  securityRequirements: [],
  signatures: [],
};
const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
app.use('/jsonrpc', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
app.use('/', restHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
grpcServer.addService(
  A2AService,
  grpcService({ requestHandler: handler, userBuilder: GrpcUserBuilder.noAuthentication }),
);
console.log(`listening on ${host}:${http.address().port} grpc ${host}:${grpcPort}`);
process.on('SIGTERM', () => {
  http.close();
  grpcServer.forceShutdown();
  process.exit(0);
});
