// Interop checks: the official A2A JavaScript SDK (npm `@a2a-js/sdk`) against a running
// Trident server.
//
// Usage: node interop.mjs http://127.0.0.1:PORT [--binding JSONRPC|HTTP+JSON|GRPC ...] [--check NAME ...]
//        [--label NAME] [--expect-differences FILE]
//
// For each binding the SDK's own ClientFactory reads the server's agent card and builds the
// client, with `preferredTransports: [binding]` choosing among the card's interfaces. Every
// check prints one line; the script ends with `interop: N passed, M failed` and exits non-zero
// when anything failed. With INTEROP_SUBTOTAL=1 (set by interop/run.sh, which prints the one
// total line itself) the closing line is `js subtotal passed=N failed=M` instead.
//
// `--label NAME` replaces `js` in those lines. `--expect-differences FILE` (a markdown table, e.g.
// interop/gateway03-expected.md, rows `| client | binding | check | fails with | why |`) names the
// checks that must FAIL with an error containing "fails with" (for a server that cannot hold them,
// e.g. a v0.3 agent behind `trident gateway`): such a check counts as passed only when it fails
// that way, and as failed when it passes or fails otherwise; a row matching no check run fails too.

import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';

import { Role, TaskState } from '@a2a-js/sdk';
import { ClientFactory, JsonRpcTransportFactory, RestTransportFactory } from '@a2a-js/sdk/client';
import { GrpcTransportFactory } from '@a2a-js/sdk/client/grpc';
import {
  ContentTypeNotSupportedError,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError,
  VersionNotSupportedError,
} from '@a2a-js/sdk/errors';

const CHECK_TIMEOUT_MS = 30_000;
// A check listed as an expected difference may fail by hanging (e.g. a stream that never
// starts): it gets this long instead.
const DIFFERENCE_TIMEOUT_MS = 10_000;
const BINDINGS = ['JSONRPC', 'HTTP+JSON', 'GRPC'];

class CheckFailed extends Error {
  name = 'CheckFailed';
}

function expect(cond, what) {
  if (!cond) throw new CheckFailed(what);
}

const stateName = (s) => TaskState[s] ?? String(s);

function expectState(task, ...states) {
  expect(
    states.includes(task.status?.state),
    `task ${task.id}: state ${stateName(task.status?.state)}, want ${states.map(stateName).join(' or ')}`,
  );
}

// The binding-specific code the SDK attached to an A2A error: JSON-RPC envelope code, HTTP
// status, or gRPC status code.
function wireCode(e) {
  if (e.transport === 'jsonrpc') return `JSON-RPC ${e.envelopeCode}`;
  if (e.transport === 'rest') return `HTTP ${e.statusCode}`;
  if (e.transport === 'grpc') return `gRPC ${e.status}`;
  return `transport ${e.transport}`;
}

const WANT_CODE = {
  TaskNotFoundError: { jsonrpc: -32001, rest: 404, grpc: 5 },
  TaskNotCancelableError: { jsonrpc: -32002, rest: 400, grpc: 9 },
  ContentTypeNotSupportedError: { jsonrpc: -32005, rest: 400, grpc: 3 },
  VersionNotSupportedError: { jsonrpc: -32009, rest: 400, grpc: 9 },
  UnsupportedOperationError: { jsonrpc: -32004, rest: 400, grpc: 9 },
};

async function expectError(ErrorClass, promiseOrFn) {
  let result;
  try {
    result = await (typeof promiseOrFn === 'function' ? promiseOrFn() : promiseOrFn);
  } catch (e) {
    if (!(e instanceof ErrorClass)) {
      throw new CheckFailed(`want ${ErrorClass.name}, got ${e?.name}: ${e?.message}`);
    }
    const want = WANT_CODE[ErrorClass.name]?.[e.transport];
    const got = { jsonrpc: e.envelopeCode, rest: e.statusCode, grpc: e.status }[e.transport];
    expect(want === undefined || got === want, `${ErrorClass.name} with ${wireCode(e)}, want ${want}`);
    return e;
  }
  throw new CheckFailed(`want ${ErrorClass.name}, got a result: ${JSON.stringify(result).slice(0, 200)}`);
}

// Builders filling every field of the SDK's proto-shaped interfaces (its gRPC encoders, like
// its TypeScript types, expect complete objects).
function textPart(text) {
  return { content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' };
}

function userMessage(text, { taskId = '', contextId = '' } = {}) {
  return {
    messageId: randomUUID(),
    contextId,
    taskId,
    role: Role.ROLE_USER,
    parts: [textPart(text)],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

function sendRequest(text, { returnImmediately = false, ...ids } = {}) {
  return {
    tenant: '',
    message: userMessage(text, ids),
    configuration: {
      acceptedOutputModes: [],
      taskPushNotificationConfig: undefined,
      historyLength: undefined,
      returnImmediately,
    },
    metadata: undefined,
  };
}

const getTaskRequest = (id, historyLength) => ({ tenant: '', id, historyLength });
const cancelRequest = (id) => ({ tenant: '', id, metadata: undefined });
const isMessage = (result) => result && 'messageId' in result && !('status' in result);
const partText = (part) => (part?.content?.$case === 'text' ? part.content.value : undefined);

// A CallInterceptor (the SDK's public hook, run after the Client has normalized the service
// parameters) that asks for protocol version 0.3.
const version03 = {
  async before(args) {
    args.options = {
      ...args.options,
      serviceParameters: { ...args.options?.serviceParameters, 'A2A-Version': '0.3' },
    };
  },
  async after() {},
};

function factory(binding, interceptors) {
  return new ClientFactory({
    transports: [new JsonRpcTransportFactory(), new RestTransportFactory(), new GrpcTransportFactory()],
    preferredTransports: [binding],
    clientConfig: interceptors ? { interceptors } : undefined,
  });
}

class Binding {
  constructor(baseUrl, binding) {
    this.baseUrl = baseUrl;
    this.binding = binding;
  }

  async open() {
    this.client = await factory(this.binding).createFromUrl(this.baseUrl);
    this.v03 = await factory(this.binding, [version03]).createFromUrl(this.baseUrl);
  }

  async sendTask(req) {
    const result = await this.client.sendMessage(req);
    expect(!isMessage(result), `want a Task, got a Message`);
    return result;
  }

  async startSlow() {
    const task = await this.sendTask(sendRequest('slow', { returnImmediately: true }));
    expectState(task, TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING);
    return task;
  }

  cancel(id) {
    return this.client.cancelTask(cancelRequest(id));
  }
}

// --- the checks: (Binding) -> detail string ---

async function checkFactory(b) {
  for (const c of [b.client, b.v03]) {
    expect(c.transport.protocolName === b.binding, `factory chose ${c.transport.protocolName}, want ${b.binding}`);
    expect(c.protocolVersion === '1.0', `client protocolVersion ${c.protocolVersion}`);
  }
  return `factory chose ${b.client.transport.constructor.name} (${b.client.transport.protocolName}) from the agent card`;
}

async function checkSendBlocking(b) {
  const text = `interop echo ${randomUUID().slice(0, 8)}`;
  const task = await b.sendTask(sendRequest(text));
  expectState(task, TaskState.TASK_STATE_COMPLETED);
  expect(task.artifacts.length === 1, `${task.artifacts.length} artifacts, want 1`);
  const art = task.artifacts[0];
  expect(art.artifactId === 'echo', `artifact id ${art.artifactId}, want echo`);
  expect(art.parts.length === 1 && partText(art.parts[0]) === text, `artifact parts ${JSON.stringify(art.parts)}`);
  return `task ${task.id} COMPLETED, artifact text matches`;
}

async function checkReturnImmediately(b) {
  const task = await b.startSlow();
  const first = stateName(task.status.state);
  const canceled = await b.cancel(task.id);
  expectState(canceled, TaskState.TASK_STATE_CANCELED);
  return `returned ${first}, then CANCELED`;
}

async function checkDirectReply(b) {
  const result = await b.client.sendMessage(sendRequest('reply hi'));
  expect(isMessage(result), `want a Message, got ${JSON.stringify(result).slice(0, 200)}`);
  expect(result.role === Role.ROLE_AGENT, `message role ${result.role}, want ROLE_AGENT`);
  expect(partText(result.parts[0]), 'reply has no text part');
  return `Message ${JSON.stringify(partText(result.parts[0]))}`;
}

async function checkStreaming(b) {
  const events = [];
  for await (const ev of b.client.sendMessageStream(sendRequest('stream 3'))) events.push(ev);
  const kinds = events.map((ev) => ev.payload?.$case);
  expect(events.length >= 5, `${events.length} events (${kinds}), want >= 5`);
  expect(kinds[0] === 'task', `first event is ${kinds[0]}, want task`);
  const taskId = events[0].payload.value.id;
  expect(kinds.slice(1).every((k) => k === 'statusUpdate' || k === 'artifactUpdate'), `unexpected events ${kinds}`);
  const chunks = events.filter((ev) => ev.payload.$case === 'artifactUpdate').map((ev) => ev.payload.value);
  expect(chunks.length === 3, `${chunks.length} artifact updates, want 3 (${kinds})`);
  const append = chunks.map((c) => c.append);
  const last = chunks.map((c) => c.lastChunk);
  expect(JSON.stringify(append) === '[false,true,true]', `append flags ${append}, want false,true,true`);
  expect(JSON.stringify(last) === '[false,false,true]', `lastChunk flags ${last}, want false,false,true`);
  expect(new Set(chunks.map((c) => c.artifact.artifactId)).size === 1, 'chunks carry different artifact ids');
  expect(chunks.every((c) => c.taskId === taskId), 'artifact update taskId differs from the task');
  const end = events.at(-1).payload;
  expect(end.$case === 'statusUpdate', `last event is ${end.$case}, want statusUpdate`);
  expect(
    end.value.status.state === TaskState.TASK_STATE_COMPLETED,
    `last status ${stateName(end.value.status.state)}, want COMPLETED`,
  );
  return `${events.length} events: ${kinds.join(',')}`;
}

async function checkGetTaskHistory(b) {
  const task = await b.sendTask(sendRequest('input'));
  expectState(task, TaskState.TASK_STATE_INPUT_REQUIRED);
  expect(partText(task.status.message?.parts?.[0]) === 'What is your name?', `status message ${JSON.stringify(task.status.message)}`);
  const done = await b.sendTask(sendRequest('Ada', { taskId: task.id, contextId: task.contextId }));
  expect(done.id === task.id, `follow-up answered task ${done.id}, want ${task.id}`);
  expectState(done, TaskState.TASK_STATE_COMPLETED);
  const texts = done.artifacts.flatMap((a) => a.parts.map(partText));
  expect(texts.includes('Hello, Ada!'), `artifact texts ${JSON.stringify(texts)}, want "Hello, Ada!"`);
  const full = await b.client.getTask(getTaskRequest(task.id));
  expect(full.history.length >= 2, `full history has ${full.history.length} messages, want >= 2`);
  const one = await b.client.getTask(getTaskRequest(task.id, 1));
  expect(one.history.length === 1, `historyLength=1 returned ${one.history.length} messages`);
  expect(one.history[0].messageId === full.history.at(-1).messageId, 'historyLength=1 did not return the latest message');
  return `full history ${full.history.length}, historyLength=1 -> 1 (the latest)`;
}

async function checkListTasksPaging(b) {
  const contextId = `interop-js-${randomUUID()}`;
  const created = new Set();
  for (let i = 0; i < 5; i++) {
    const t = await b.sendTask(sendRequest(`echo ${i}`, { contextId }));
    expect(t.contextId === contextId, `task contextId ${t.contextId}, want ${contextId}`);
    created.add(t.id);
  }
  const seen = [];
  let pageToken = '';
  let pages = 0;
  for (;;) {
    const resp = await b.client.listTasks({
      tenant: '',
      contextId,
      status: TaskState.TASK_STATE_UNSPECIFIED,
      pageSize: 2,
      pageToken,
      historyLength: undefined,
      statusTimestampAfter: undefined,
      includeArtifacts: undefined,
    });
    pages++;
    expect(resp.totalSize === 5, `page ${pages}: totalSize ${resp.totalSize}, want 5`);
    expect(resp.tasks.length <= 2, `page ${pages}: ${resp.tasks.length} tasks for pageSize 2`);
    seen.push(...resp.tasks.map((t) => t.id));
    pageToken = resp.nextPageToken;
    if (!pageToken) break;
    expect(pages < 10, 'more than 10 pages for 5 tasks');
  }
  expect(new Set(seen).size === seen.length, `duplicate tasks across pages: ${seen}`);
  expect(seen.length === created.size && seen.every((id) => created.has(id)), `listed ${seen}, created ${[...created]}`);
  return `${pages} pages, 5/5 tasks, totalSize 5`;
}

function listRequest(fields) {
  return {
    tenant: '',
    contextId: '',
    status: TaskState.TASK_STATE_UNSPECIFIED,
    pageSize: undefined,
    pageToken: '',
    historyLength: undefined,
    statusTimestampAfter: undefined,
    includeArtifacts: undefined,
    ...fields,
  };
}

async function checkListTasksFilters(b) {
  const contextId = `interop-js-${randomUUID()}`;
  const before = new Date(Date.now() - 60_000).toISOString();
  const later = new Date(Date.now() + 3_600_000).toISOString();
  for (const text of ['echo a', 'echo b', 'fail']) await b.sendTask(sendRequest(text, { contextId }));
  const list = async (fields) => {
    const resp = await b.client.listTasks(listRequest({ contextId, ...fields }));
    expect(resp.totalSize === resp.tasks.length, `${JSON.stringify(fields)}: totalSize ${resp.totalSize}, ${resp.tasks.length} tasks`);
    return resp.tasks;
  };
  const failed = await list({ status: TaskState.TASK_STATE_FAILED });
  expect(failed.length === 1, `status=FAILED: ${failed.length} tasks, want 1`);
  expectState(failed[0], TaskState.TASK_STATE_FAILED);
  const done = await list({ status: TaskState.TASK_STATE_COMPLETED, includeArtifacts: true });
  expect(done.length === 2, `status=COMPLETED: ${done.length} tasks, want 2`);
  expect(done.every((t) => t.artifacts.length === 1), 'includeArtifacts=true: artifacts missing');
  const plain = await list({});
  expect(plain.length === 3, `no filter: ${plain.length} tasks, want 3`);
  expect(plain.every((t) => t.artifacts.length === 0), 'artifacts returned without includeArtifacts');
  const noHistory = await list({ historyLength: 0 });
  expect(noHistory.every((t) => t.history.length === 0), 'historyLength=0 returned history');
  expect((await list({ statusTimestampAfter: later })).length === 0, 'statusTimestampAfter=+1h returned tasks');
  expect((await list({ statusTimestampAfter: before })).length === 3, 'statusTimestampAfter=-1min did not return all 3');
  return 'status, includeArtifacts, historyLength=0, statusTimestampAfter filters ok';
}

async function checkCancel(b) {
  const task = await b.startSlow();
  const canceled = await b.cancel(task.id);
  expect(canceled.id === task.id, 'cancel returned another task');
  expectState(canceled, TaskState.TASK_STATE_CANCELED);
  const got = await b.client.getTask(getTaskRequest(task.id));
  expectState(got, TaskState.TASK_STATE_CANCELED);
  return 'slow task CANCELED (GetTask agrees)';
}

async function checkSubscribe(b) {
  const task = await b.startSlow();
  const stream = b.client.resubscribeTask({ tenant: '', id: task.id });
  const first = await stream.next();
  expect(!first.done, 'stream ended before the snapshot');
  expect(first.value.payload?.$case === 'task', `first event is ${first.value.payload?.$case}, want task`);
  expect(first.value.payload.value.id === task.id, 'snapshot is another task');
  const canceled = await b.cancel(task.id);
  expectState(canceled, TaskState.TASK_STATE_CANCELED);
  const rest = [];
  for await (const ev of stream) rest.push(ev);
  const kinds = rest.map((ev) => ev.payload?.$case);
  expect(rest.length > 0, 'stream ended without a CANCELED event');
  const end = rest.at(-1).payload;
  const finalState = end.$case === 'statusUpdate' || end.$case === 'task' ? end.value.status?.state : undefined;
  expect(finalState === TaskState.TASK_STATE_CANCELED, `stream ended with ${kinds}, want a final CANCELED status`);
  return `snapshot, then ${kinds.join(',')}; stream closed`;
}

async function checkPushConfigCrud(b) {
  const task = await b.sendTask(sendRequest('input'));
  expectState(task, TaskState.TASK_STATE_INPUT_REQUIRED);
  const url = 'http://127.0.0.1:9/hook';
  const created = await b.client.createTaskPushNotificationConfig({
    tenant: '',
    id: '',
    taskId: task.id,
    url,
    token: 'interop-token',
    authentication: undefined,
  });
  expect(created.id, 'created config has no id');
  expect(created.url === url, `created url ${created.url}`);
  expect(created.taskId === task.id, `created taskId ${created.taskId}, want ${task.id}`);
  const ref = { tenant: '', taskId: task.id, id: created.id };
  const got = await b.client.getTaskPushNotificationConfig(ref);
  expect(got.id === created.id && got.url === url, `get returned ${JSON.stringify(got)}`);
  const listed = await b.client.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' });
  const ids = listed.configs.map((c) => c.id);
  expect(ids.includes(created.id), `list ${ids} lacks ${created.id}`);
  await b.client.deleteTaskPushNotificationConfig(ref);
  await expectError(TaskNotFoundError, () => b.client.getTaskPushNotificationConfig(ref));
  return 'create/get/list/delete ok; get after delete -> TaskNotFoundError';
}

async function checkPushConfigInline(b) {
  const url = 'http://127.0.0.1:9/inline-hook';
  const req = sendRequest('input');
  req.configuration.taskPushNotificationConfig = { tenant: '', id: '', taskId: '', url, token: 'inline', authentication: undefined };
  const task = await b.sendTask(req);
  expectState(task, TaskState.TASK_STATE_INPUT_REQUIRED);
  const listed = await b.client.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' });
  const urls = listed.configs.map((c) => c.url);
  expect(urls.length === 1 && urls[0] === url, `configs ${urls}, want [${url}]`);
  expect(listed.configs[0].taskId === task.id, `config taskId ${listed.configs[0].taskId}, want ${task.id}`);
  return 'SendMessageConfiguration.taskPushNotificationConfig stored for the new task';
}

async function checkUnknownTask(b) {
  const e = await expectError(TaskNotFoundError, () => b.client.getTask(getTaskRequest('nope')));
  return `${e.name} (${wireCode(e)}): ${e.message}`;
}

async function checkCancelCompleted(b) {
  const task = await b.sendTask(sendRequest('echo me'));
  expectState(task, TaskState.TASK_STATE_COMPLETED);
  const e = await expectError(TaskNotCancelableError, () => b.cancel(task.id));
  return `${e.name} (${wireCode(e)}): ${e.message}`;
}

async function checkWrongVersion(b) {
  const e = await expectError(VersionNotSupportedError, () => b.v03.getTask(getTaskRequest('nope')));
  return `A2A-Version 0.3 (CallInterceptor) -> ${e.name} (${wireCode(e)}): ${e.message}`;
}

async function checkRefuse(b) {
  const e = await expectError(ContentTypeNotSupportedError, () => b.client.sendMessage(sendRequest('refuse')));
  return `${e.name} (${wireCode(e)}): ${e.message}`;
}

async function checkFailAndReject(b) {
  expectState(await b.sendTask(sendRequest('fail')), TaskState.TASK_STATE_FAILED);
  expectState(await b.sendTask(sendRequest('reject')), TaskState.TASK_STATE_REJECTED);
  return 'fail -> FAILED, reject -> REJECTED';
}

async function checkAuthRequired(b) {
  const task = await b.sendTask(sendRequest('auth'));
  expectState(task, TaskState.TASK_STATE_AUTH_REQUIRED);
  const done = await b.sendTask(sendRequest('signed in', { taskId: task.id, contextId: task.contextId }));
  expect(done.id === task.id, `follow-up answered task ${done.id}, want ${task.id}`);
  expectState(done, TaskState.TASK_STATE_COMPLETED);
  return 'AUTH_REQUIRED, follow-up -> COMPLETED';
}

async function drain(stream) {
  const events = [];
  for await (const ev of stream) events.push(ev);
  return events;
}

async function checkStreamErrors(b) {
  const e1 = await expectError(ContentTypeNotSupportedError, () => drain(b.client.sendMessageStream(sendRequest('refuse'))));
  const e2 = await expectError(TaskNotFoundError, () => drain(b.client.resubscribeTask({ tenant: '', id: 'nope' })));
  const done = await b.sendTask(sendRequest('echo done'));
  const e3 = await expectError(UnsupportedOperationError, () => drain(b.client.resubscribeTask({ tenant: '', id: done.id })));
  return `stream refuse -> ${e1.name}; subscribe nope -> ${e2.name}; subscribe completed -> ${e3.name}`;
}

async function checkTenant(b) {
  const tenant = `tenant-${randomUUID().slice(0, 8)}`;
  const task = await b.sendTask({ ...sendRequest('echo tenant'), tenant });
  expectState(task, TaskState.TASK_STATE_COMPLETED);
  const got = await b.client.getTask({ tenant, id: task.id, historyLength: undefined });
  expect(got.id === task.id, 'tenant GetTask returned another task');
  await expectError(TaskNotFoundError, () => b.client.getTask(getTaskRequest(task.id)));
  const listed = await b.client.listTasks({
    tenant,
    contextId: '',
    status: TaskState.TASK_STATE_UNSPECIFIED,
    pageSize: undefined,
    pageToken: '',
    historyLength: undefined,
    statusTimestampAfter: undefined,
    includeArtifacts: undefined,
  });
  const ids = listed.tasks.map((t) => t.id);
  expect(ids.length === 1 && ids[0] === task.id, `tenant list ${ids}`);
  return `task visible under ${tenant} only`;
}

const CHECKS = [
  ['factory-selects-binding', checkFactory],
  ['send-blocking', checkSendBlocking],
  ['send-return-immediately', checkReturnImmediately],
  ['direct-reply', checkDirectReply],
  ['streaming', checkStreaming],
  ['get-task-history-length', checkGetTaskHistory],
  ['list-tasks-paging', checkListTasksPaging],
  ['list-tasks-filters', checkListTasksFilters],
  ['cancel', checkCancel],
  ['subscribe', checkSubscribe],
  ['push-config-crud', checkPushConfigCrud],
  ['push-config-inline', checkPushConfigInline],
  ['error-unknown-task', checkUnknownTask],
  ['error-cancel-completed', checkCancelCompleted],
  ['error-wrong-version', checkWrongVersion],
  ['error-content-type-refused', checkRefuse],
  ['terminal-failed-rejected', checkFailAndReject],
  ['auth-required', checkAuthRequired],
  ['stream-errors', checkStreamErrors],
  ['tenant-scoping', checkTenant],
];

function withTimeout(promise, ms) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timeout after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function describe(e) {
  const cause = e?.cause ? ` (cause: ${e.cause?.message ?? e.cause})` : '';
  return `${e?.name ?? 'Error'}: ${e?.message ?? e}${cause}`;
}

// The rows of the expected-differences table for `client` (or `*`): "binding check" -> {failsWith, why}.
function loadExpectedDifferences(path, client) {
  const rows = new Map();
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    if (!line.startsWith('|')) continue;
    const cells = line.trim().replace(/^\|/, '').replace(/\|$/, '').split('|').map((c) => c.trim());
    if (cells.length !== 5 || cells[0] === 'client' || /^[-: ]*$/.test(cells[0])) continue;
    const [who, binding, check, failsWith, why] = cells.map((c) => c.replace(/^`|`$/g, ''));
    if (who === client || who === '*') rows.set(`${binding} ${check}`, { failsWith, why });
  }
  return rows;
}

async function run(baseUrl, bindings, only, label, expected) {
  let passed = 0;
  let failed = 0;
  const used = new Set();
  const expectation = (binding, name) => {
    for (const key of [`${binding} ${name}`, `* ${name}`]) {
      if (expected.has(key)) {
        used.add(key);
        return expected.get(key);
      }
    }
    return undefined;
  };
  for (const binding of bindings) {
    const b = new Binding(baseUrl, binding);
    try {
      await withTimeout(b.open(), CHECK_TIMEOUT_MS);
    } catch (e) {
      console.log(`FAIL ${label} ${binding} client-from-card: ${describe(e)}`);
      failed++;
      continue;
    }
    for (const [name, check] of CHECKS) {
      if (only.size && !only.has(name)) continue;
      const differs = expectation(binding, name);
      const start = performance.now();
      let detail;
      try {
        detail = await withTimeout(check(b), differs ? DIFFERENCE_TIMEOUT_MS : CHECK_TIMEOUT_MS);
      } catch (e) {
        if (differs && describe(e).includes(differs.failsWith)) {
          passed++;
          console.log(`ok   ${label} ${binding} ${name}: expected difference (${differs.why}): ${describe(e).slice(0, 200)}`);
        } else {
          failed++;
          const want = differs ? ` (expected to fail with ${JSON.stringify(differs.failsWith)})` : '';
          console.log(`FAIL ${label} ${binding} ${name}${want}: ${describe(e)}`);
          if (process.env.INTEROP_VERBOSE && !(e instanceof CheckFailed)) console.error(e);
        }
        continue;
      }
      if (differs) {
        failed++;
        console.log(
          `FAIL ${label} ${binding} ${name}: passed, but is listed as an expected difference (fails with ${JSON.stringify(differs.failsWith)}): ${detail}`,
        );
      } else {
        passed++;
        console.log(`ok   ${label} ${binding} ${name} (${Math.round(performance.now() - start)} ms): ${detail}`);
      }
    }
  }
  if (!only.size) {
    for (const key of expected.keys()) {
      if (used.has(key)) continue;
      failed++;
      console.log(`FAIL ${label} expected-differences: the row (${key}) matches no check run`);
    }
  }
  return { passed, failed };
}

function parseArgs(argv) {
  const args = { baseUrl: undefined, bindings: [], checks: new Set(), label: 'js', expected: new Map() };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--label') {
      args.label = argv[++i];
    } else if (argv[i] === '--expect-differences') {
      args.expected = loadExpectedDifferences(argv[++i], 'js');
    } else if (argv[i] === '--binding') {
      const v = argv[++i];
      if (!BINDINGS.includes(v)) throw new Error(`--binding must be one of ${BINDINGS}`);
      args.bindings.push(v);
    } else if (argv[i] === '--check') {
      args.checks.add(argv[++i]);
    } else if (!args.baseUrl) {
      args.baseUrl = argv[i].replace(/\/+$/, '');
    } else {
      throw new Error(`unexpected argument ${argv[i]}`);
    }
  }
  if (!args.baseUrl) {
    throw new Error(
      'usage: node interop.mjs http://127.0.0.1:PORT [--binding B] [--check NAME] [--label NAME] [--expect-differences FILE]',
    );
  }
  if (args.bindings.length === 0) args.bindings = BINDINGS;
  return args;
}

const args = parseArgs(process.argv.slice(2));
let result;
try {
  const card = await fetch(`${args.baseUrl}/.well-known/agent-card.json`, { signal: AbortSignal.timeout(5000) });
  if (!card.ok) throw new Error(`HTTP ${card.status}`);
  result = await run(args.baseUrl, args.bindings, args.checks, args.label, args.expected);
} catch (e) {
  console.log(`FAIL ${args.label} agent-card: ${describe(e)}`);
  result = { passed: 0, failed: 1 };
}
if (process.env.INTEROP_SUBTOTAL) {
  console.log(`${args.label} subtotal passed=${result.passed} failed=${result.failed}`);
} else {
  console.log(`interop: ${result.passed} passed, ${result.failed} failed`);
}
// Open gRPC channels or abandoned streams must not keep the process alive.
process.exit(result.failed ? 1 : 0);
