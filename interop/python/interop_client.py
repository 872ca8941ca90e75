"""Interop checks: the official A2A Python SDK (PyPI `a2a-sdk`) against a running Trident server.

Usage: python interop_client.py http://127.0.0.1:PORT [--binding JSONRPC --binding HTTP+JSON --binding GRPC]

For each binding, the SDK's own `ClientFactory` reads the server's agent card and builds the
client for that binding (`ClientConfig.supported_protocol_bindings=[binding]`). Every check
prints one line; the script ends with `interop: N passed, M failed` and exits non-zero when
anything failed. With INTEROP_SUBTOTAL=1 (set by interop/run.sh, which prints the one total
line itself) the closing line is `python subtotal passed=N failed=M` instead.

`--label NAME` replaces `python` in those lines. `--expect-differences FILE` (a markdown table,
e.g. interop/gateway03-expected.md, rows `| client | binding | check | fails with | why |`) names
the checks that must FAIL with an error containing "fails with" (for a server that cannot hold
them, e.g. a v0.3 agent behind `trident gateway`): such a check counts as passed only when it
fails that way, and as failed when it passes or fails otherwise; a row that matches no check run
is a failure too.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
import traceback
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable

import grpc
import httpx

from google.protobuf import json_format, text_format
from google.protobuf.timestamp_pb2 import Timestamp

from a2a.client import ClientCallContext, ClientConfig, ClientFactory
from a2a.client.transports.grpc import GrpcTransport, _map_grpc_error
from a2a.client.transports.jsonrpc import JsonRpcTransport
from a2a.client.transports.rest import RestTransport
from a2a.types.a2a_pb2 import (
    AgentCard,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a.utils.constants import PROTOCOL_VERSION_CURRENT, VERSION_HEADER, TransportProtocol
from a2a.utils.errors import (
    ContentTypeNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
    VersionNotSupportedError,
)

CHECK_TIMEOUT = 30.0
# A check listed as an expected difference may fail by hanging (e.g. a stream that never
# starts): it gets this long instead.
DIFFERENCE_TIMEOUT = 10.0
IDLE_SECONDS = 17.0
BINDINGS = [TransportProtocol.JSONRPC.value, TransportProtocol.HTTP_JSON.value, TransportProtocol.GRPC.value]
TRANSPORT_CLASS = {
    TransportProtocol.JSONRPC.value: JsonRpcTransport,
    TransportProtocol.HTTP_JSON.value: RestTransport,
    TransportProtocol.GRPC.value: GrpcTransport,
}


class CheckFailed(Exception):
    pass


def short(value: object, limit: int = 200) -> str:
    """One line of at most `limit` characters (protobuf messages print over many lines)."""
    if isinstance(value, list):
        text = '[' + ', '.join(short(v, limit) for v in value) + ']'
    elif hasattr(value, 'DESCRIPTOR'):
        text = text_format.MessageToString(value, as_one_line=True)
    else:
        text = str(value)
    return text if len(text) <= limit else text[: limit - 3] + '...'


def expect(cond: bool, what: str) -> None:
    if not cond:
        raise CheckFailed(what)


def state_name(state: int) -> str:
    return TaskState.Name(state)


def expect_state(task: Task, *states: int) -> None:
    expect(
        task.status.state in states,
        f'task {task.id}: state {state_name(task.status.state)}, want '
        + ' or '.join(state_name(s) for s in states),
    )


async def expect_error(exc_type: type[BaseException], coro: Awaitable[object]) -> BaseException:
    try:
        result = await coro
    except exc_type as e:
        return e
    except Exception as e:  # noqa: BLE001
        raise CheckFailed(f'want {exc_type.__name__}, got {type(e).__name__}: {e}') from e
    raise CheckFailed(f'want {exc_type.__name__}, got a result: {short(result)}')


def user_message(text: str, *, task_id: str = '', context_id: str = '') -> Message:
    return Message(
        message_id=str(uuid.uuid4()),
        role=Role.ROLE_USER,
        parts=[Part(text=text)],
        task_id=task_id,
        context_id=context_id,
    )


def send_request(text: str, *, return_immediately: bool = False, **ids: str) -> SendMessageRequest:
    req = SendMessageRequest(message=user_message(text, **ids))
    if return_immediately:
        req.configuration.CopyFrom(SendMessageConfiguration(return_immediately=True))
    return req


class Binding:
    """The two SDK clients of one binding: blocking (`streaming=False`) and streaming."""

    def __init__(self, base_url: str, binding: str, httpx_client: httpx.AsyncClient | None = None):
        self.base_url = base_url
        self.binding = binding
        self.httpx_client = httpx_client
        self.blocking = None
        self.streaming = None

    def config(self, streaming: bool) -> ClientConfig:
        return ClientConfig(
            streaming=streaming,
            supported_protocol_bindings=[TransportProtocol(self.binding)],
            grpc_channel_factory=grpc.aio.insecure_channel,
            httpx_client=self.httpx_client,
        )

    async def open(self) -> None:
        self.blocking = await ClientFactory(self.config(False)).create_from_url(self.base_url)
        self.streaming = await ClientFactory(self.config(True)).create_from_url(self.base_url)

    async def close(self) -> None:
        for c in (self.blocking, self.streaming):
            if c is not None:
                await c.close()

    # --- helpers built on the SDK's Client API ---

    async def send(self, req: SendMessageRequest) -> StreamResponse:
        """Non-streaming SendMessage; the SDK wraps the result in one StreamResponse."""
        events = [ev async for ev in self.blocking.send_message(req)]
        expect(len(events) == 1, f'blocking send yielded {len(events)} events, want 1')
        return events[0]

    async def send_task(self, req: SendMessageRequest) -> Task:
        ev = await self.send(req)
        expect(ev.HasField('task'), f'want a Task, got {ev.WhichOneof("payload")}')
        return ev.task

    async def start_slow(self) -> Task:
        task = await self.send_task(send_request('slow', return_immediately=True))
        expect_state(task, TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING)
        return task

    async def cancel(self, task_id: str) -> Task:
        return await self.blocking.cancel_task(CancelTaskRequest(id=task_id))


# --- the checks, one coroutine each: (Binding) -> detail string ---


async def check_factory(b: Binding) -> str:
    for c in (b.blocking, b.streaming):
        transport = c._transport  # noqa: SLF001 - which transport the factory picked
        want = TRANSPORT_CLASS[b.binding]
        expect(isinstance(transport, want), f'factory built {type(transport).__name__}, want {want.__name__}')
    return f'factory chose {TRANSPORT_CLASS[b.binding].__name__} from the agent card'


async def check_send_blocking(b: Binding) -> str:
    text = f'interop echo {uuid.uuid4().hex[:8]}'
    task = await b.send_task(send_request(text))
    expect_state(task, TaskState.TASK_STATE_COMPLETED)
    expect(len(task.artifacts) == 1, f'{len(task.artifacts)} artifacts, want 1')
    art = task.artifacts[0]
    expect(art.artifact_id == 'echo', f'artifact id {art.artifact_id!r}, want "echo"')
    expect(len(art.parts) == 1 and art.parts[0].text == text, f'artifact parts {short(list(art.parts))}, want text {text!r}')
    return f'task {task.id} COMPLETED, artifact text matches'


async def check_return_immediately(b: Binding) -> str:
    task = await b.start_slow()
    first = state_name(task.status.state)
    canceled = await b.cancel(task.id)
    expect_state(canceled, TaskState.TASK_STATE_CANCELED)
    return f'returned {first}, then CANCELED'


async def check_direct_reply(b: Binding) -> str:
    ev = await b.send(send_request('reply hi'))
    expect(ev.HasField('message'), f'want a Message, got {ev.WhichOneof("payload")}')
    msg = ev.message
    expect(msg.role == Role.ROLE_AGENT, f'message role {Role.Name(msg.role)}, want ROLE_AGENT')
    expect(len(msg.parts) > 0 and msg.parts[0].text != '', 'reply has no text part')
    return f'Message {msg.parts[0].text!r}'


async def check_streaming(b: Binding) -> str:
    events = [ev async for ev in b.streaming.send_message(send_request('stream 3'))]
    kinds = [ev.WhichOneof('payload') for ev in events]
    expect(len(events) >= 5, f'{len(events)} events ({kinds}), want >= 5')
    expect(kinds[0] == 'task', f'first event is {kinds[0]}, want task')
    task_id = events[0].task.id
    chunks = [ev.artifact_update for ev in events if ev.HasField('artifact_update')]
    expect(len(chunks) == 3, f'{len(chunks)} artifact updates, want 3 ({kinds})')
    expect(all(kind in ('status_update', 'artifact_update') for kind in kinds[1:]), f'unexpected events {kinds}')
    expect(
        [c.append for c in chunks] == [False, True, True],
        f'append flags {[c.append for c in chunks]}, want [False, True, True]',
    )
    expect(
        [c.last_chunk for c in chunks] == [False, False, True],
        f'lastChunk flags {[c.last_chunk for c in chunks]}, want [False, False, True]',
    )
    expect(len({c.artifact.artifact_id for c in chunks}) == 1, 'chunks carry different artifact ids')
    expect(all(c.task_id == task_id for c in chunks), 'artifact update taskId differs from the task')
    last = events[-1]
    expect(last.HasField('status_update'), f'last event is {kinds[-1]}, want status_update')
    expect(
        last.status_update.status.state == TaskState.TASK_STATE_COMPLETED,
        f'last status {state_name(last.status_update.status.state)}, want COMPLETED',
    )
    return f'{len(events)} events: {",".join(kinds)}'


async def check_get_task_history(b: Binding) -> str:
    task = await b.send_task(send_request('input'))
    expect_state(task, TaskState.TASK_STATE_INPUT_REQUIRED)
    expect(
        task.status.message.parts and task.status.message.parts[0].text == 'What is your name?',
        f'status message {short(task.status.message)}',
    )
    done = await b.send_task(send_request('Ada', task_id=task.id, context_id=task.context_id))
    expect(done.id == task.id, f'follow-up answered task {done.id}, want {task.id}')
    expect_state(done, TaskState.TASK_STATE_COMPLETED)
    texts = [p.text for a in done.artifacts for p in a.parts]
    expect('Hello, Ada!' in texts, f'artifact texts {texts}, want "Hello, Ada!"')
    full = await b.blocking.get_task(GetTaskRequest(id=task.id))
    expect(len(full.history) >= 2, f'full history has {len(full.history)} messages, want >= 2')
    one = await b.blocking.get_task(GetTaskRequest(id=task.id, history_length=1))
    expect(len(one.history) == 1, f'historyLength=1 returned {len(one.history)} messages')
    expect(
        one.history[0].message_id == full.history[-1].message_id,
        'historyLength=1 did not return the most recent message',
    )
    return f'full history {len(full.history)}, historyLength=1 -> 1 (the latest)'


async def check_list_tasks_paging(b: Binding) -> str:
    ctx = f'interop-py-{uuid.uuid4()}'
    created = set()
    for i in range(5):
        t = await b.send_task(send_request(f'echo {i}', context_id=ctx))
        expect(t.context_id == ctx, f'task contextId {t.context_id!r}, want {ctx!r}')
        created.add(t.id)
    seen: list[str] = []
    token = ''
    pages = 0
    while True:
        resp = await b.blocking.list_tasks(ListTasksRequest(context_id=ctx, page_size=2, page_token=token))
        pages += 1
        expect(resp.total_size == 5, f'page {pages}: totalSize {resp.total_size}, want 5')
        expect(len(resp.tasks) <= 2, f'page {pages}: {len(resp.tasks)} tasks for pageSize 2')
        seen.extend(t.id for t in resp.tasks)
        token = resp.next_page_token
        if not token:
            break
        expect(pages < 10, 'more than 10 pages for 5 tasks')
    expect(len(seen) == len(set(seen)), f'duplicate tasks across pages: {seen}')
    expect(set(seen) == created, f'listed {sorted(seen)}, created {sorted(created)}')
    return f'{pages} pages, 5/5 tasks, totalSize 5'


async def check_list_tasks_filters(b: Binding) -> str:
    ctx = f'interop-py-{uuid.uuid4()}'
    before = Timestamp()
    before.FromSeconds(int(time.time()) - 60)
    later = Timestamp()
    later.FromSeconds(int(time.time()) + 3600)
    for text in ('echo a', 'echo b', 'fail'):
        await b.send_task(send_request(text, context_id=ctx))

    async def ids(**kw: object) -> list[Task]:
        resp = await b.blocking.list_tasks(ListTasksRequest(context_id=ctx, **kw))
        expect(resp.total_size == len(resp.tasks), f'{kw}: totalSize {resp.total_size}, {len(resp.tasks)} tasks')
        return list(resp.tasks)

    failed = await ids(status=TaskState.TASK_STATE_FAILED)
    expect(len(failed) == 1, f'status=FAILED: {len(failed)} tasks, want 1')
    expect_state(failed[0], TaskState.TASK_STATE_FAILED)
    done = await ids(status=TaskState.TASK_STATE_COMPLETED, include_artifacts=True)
    expect(len(done) == 2, f'status=COMPLETED: {len(done)} tasks, want 2')
    expect(all(len(t.artifacts) == 1 for t in done), 'includeArtifacts=true: artifacts missing')
    plain = await ids()
    expect(len(plain) == 3, f'no filter: {len(plain)} tasks, want 3')
    expect(all(len(t.artifacts) == 0 for t in plain), 'artifacts returned without includeArtifacts')
    no_history = await ids(history_length=0)
    expect(all(len(t.history) == 0 for t in no_history), 'historyLength=0 returned history')
    expect(len(await ids(status_timestamp_after=later)) == 0, 'statusTimestampAfter=+1h returned tasks')
    expect(len(await ids(status_timestamp_after=before)) == 3, 'statusTimestampAfter=-1min did not return all 3')
    return 'status, includeArtifacts, historyLength=0, statusTimestampAfter filters ok'


async def check_cancel(b: Binding) -> str:
    task = await b.start_slow()
    canceled = await b.cancel(task.id)
    expect(canceled.id == task.id, 'cancel returned another task')
    expect_state(canceled, TaskState.TASK_STATE_CANCELED)
    got = await b.blocking.get_task(GetTaskRequest(id=task.id))
    expect_state(got, TaskState.TASK_STATE_CANCELED)
    return 'slow task CANCELED (GetTask agrees)'


async def check_subscribe(b: Binding) -> str:
    task = await b.start_slow()
    stream = b.streaming.subscribe(SubscribeToTaskRequest(id=task.id))
    first = await anext(stream)
    expect(first.HasField('task'), f'first event is {first.WhichOneof("payload")}, want task')
    expect(first.task.id == task.id, 'snapshot is another task')
    canceled = await b.cancel(task.id)
    expect_state(canceled, TaskState.TASK_STATE_CANCELED)
    rest = [ev async for ev in stream]
    kinds = [ev.WhichOneof('payload') for ev in rest]
    expect(rest, 'stream ended without a CANCELED event')
    last = rest[-1]
    final_state = (
        last.status_update.status.state
        if last.HasField('status_update')
        else last.task.status.state
        if last.HasField('task')
        else None
    )
    expect(final_state == TaskState.TASK_STATE_CANCELED, f'stream ended with {kinds}, want a final CANCELED status')
    return f'snapshot, then {",".join(kinds)}; stream closed'


async def check_push_config_crud(b: Binding) -> str:
    task = await b.send_task(send_request('input'))
    expect_state(task, TaskState.TASK_STATE_INPUT_REQUIRED)
    url = 'http://127.0.0.1:9/hook'
    created = await b.blocking.create_task_push_notification_config(
        TaskPushNotificationConfig(task_id=task.id, url=url, token='interop-token')
    )
    expect(created.id != '', 'created config has no id')
    expect(created.url == url, f'created url {created.url!r}')
    expect(created.task_id == task.id, f'created taskId {created.task_id!r}, want {task.id!r}')
    got = await b.blocking.get_task_push_notification_config(
        GetTaskPushNotificationConfigRequest(task_id=task.id, id=created.id)
    )
    expect(got.id == created.id and got.url == url, f'get returned {short(got)}')
    listed = await b.blocking.list_task_push_notification_configs(
        ListTaskPushNotificationConfigsRequest(task_id=task.id)
    )
    expect(created.id in [c.id for c in listed.configs], f'list {[c.id for c in listed.configs]} lacks {created.id}')
    await b.blocking.delete_task_push_notification_config(
        DeleteTaskPushNotificationConfigRequest(task_id=task.id, id=created.id)
    )
    await expect_error(
        TaskNotFoundError,
        b.blocking.get_task_push_notification_config(
            GetTaskPushNotificationConfigRequest(task_id=task.id, id=created.id)
        ),
    )
    return 'create/get/list/delete ok; get after delete -> TaskNotFoundError'


async def check_push_config_inline(b: Binding) -> str:
    url = 'http://127.0.0.1:9/inline-hook'
    req = send_request('input')
    req.configuration.task_push_notification_config.CopyFrom(TaskPushNotificationConfig(url=url, token='inline'))
    task = await b.send_task(req)
    expect_state(task, TaskState.TASK_STATE_INPUT_REQUIRED)
    listed = await b.blocking.list_task_push_notification_configs(
        ListTaskPushNotificationConfigsRequest(task_id=task.id)
    )
    urls = [c.url for c in listed.configs]
    expect(urls == [url], f'configs {urls}, want [{url!r}]')
    expect(listed.configs[0].task_id == task.id, f'config taskId {listed.configs[0].task_id!r}, want {task.id!r}')
    return 'SendMessageConfiguration.taskPushNotificationConfig stored for the new task'


async def check_unknown_task(b: Binding) -> str:
    e = await expect_error(TaskNotFoundError, b.blocking.get_task(GetTaskRequest(id='nope')))
    return f'TaskNotFoundError: {e}'


async def check_cancel_completed(b: Binding) -> str:
    task = await b.send_task(send_request('echo me'))
    expect_state(task, TaskState.TASK_STATE_COMPLETED)
    e = await expect_error(TaskNotCancelableError, b.cancel(task.id))
    return f'TaskNotCancelableError: {e}'


async def check_wrong_version(b: Binding) -> str:
    request = GetTaskRequest(id='nope')
    if b.binding != TransportProtocol.GRPC.value:
        # The SDK's own per-call service parameters: on HTTP they replace the client's
        # default `A2A-Version: 1.0` header.
        ctx = ClientCallContext(service_parameters={'A2A-Version': '0.3'})
        e = await expect_error(VersionNotSupportedError, b.blocking.get_task(request, context=ctx))
        return f'A2A-Version 0.3 (ClientCallContext) -> VersionNotSupportedError: {e}'
    # On gRPC the SDK cannot replace the version: GrpcTransport._get_grpc_metadata always
    # sends ('a2a-version', '1.0') first and appends the caller's service parameters, so the
    # call would carry two a2a-version entries ['1.0', '0.3']. Use the SDK's generated stub
    # with exactly `a2a-version: 0.3`, and the SDK's own gRPC error mapping.
    stub = b.blocking._transport.stub  # noqa: SLF001
    try:
        await stub.GetTask(request, metadata=[('a2a-version', '0.3')], timeout=10)
    except grpc.aio.AioRpcError as rpc_error:
        expect(
            rpc_error.code() == grpc.StatusCode.FAILED_PRECONDITION,
            f'gRPC status {rpc_error.code().name}, want FAILED_PRECONDITION',
        )
        e = await expect_error(VersionNotSupportedError, _raise_mapped(rpc_error))
        return f'a2a-version 0.3 (SDK stub) -> FAILED_PRECONDITION, VersionNotSupportedError: {e}'
    raise CheckFailed('a2a-version 0.3 was accepted')


async def _raise_mapped(rpc_error: grpc.aio.AioRpcError) -> None:
    _map_grpc_error(rpc_error)


async def check_refuse(b: Binding) -> str:
    e = await expect_error(ContentTypeNotSupportedError, b.send(send_request('refuse')))
    return f'ContentTypeNotSupportedError: {e}'


async def check_fail_and_reject(b: Binding) -> str:
    failed = await b.send_task(send_request('fail'))
    expect_state(failed, TaskState.TASK_STATE_FAILED)
    rejected = await b.send_task(send_request('reject'))
    expect_state(rejected, TaskState.TASK_STATE_REJECTED)
    return 'fail -> FAILED, reject -> REJECTED'


async def check_auth_required(b: Binding) -> str:
    task = await b.send_task(send_request('auth'))
    expect_state(task, TaskState.TASK_STATE_AUTH_REQUIRED)
    done = await b.send_task(send_request('signed in', task_id=task.id, context_id=task.context_id))
    expect(done.id == task.id, f'follow-up answered task {done.id}, want {task.id}')
    expect_state(done, TaskState.TASK_STATE_COMPLETED)
    return 'AUTH_REQUIRED, follow-up -> COMPLETED'


async def check_stream_errors(b: Binding) -> str:
    async def drain(stream: AsyncIterator[StreamResponse]) -> list[StreamResponse]:
        return [ev async for ev in stream]

    e1 = await expect_error(ContentTypeNotSupportedError, drain(b.streaming.send_message(send_request('refuse'))))
    e2 = await expect_error(TaskNotFoundError, drain(b.streaming.subscribe(SubscribeToTaskRequest(id='nope'))))
    done = await b.send_task(send_request('echo done'))
    e3 = await expect_error(
        UnsupportedOperationError, drain(b.streaming.subscribe(SubscribeToTaskRequest(id=done.id)))
    )
    return (
        f'stream refuse -> {type(e1).__name__}; subscribe nope -> {type(e2).__name__}; '
        f'subscribe completed -> {type(e3).__name__}'
    )


async def check_tenant(b: Binding) -> str:
    tenant = f'tenant-{uuid.uuid4().hex[:8]}'
    req = send_request('echo tenant')
    req.tenant = tenant
    task = await b.send_task(req)
    expect_state(task, TaskState.TASK_STATE_COMPLETED)
    got = await b.blocking.get_task(GetTaskRequest(tenant=tenant, id=task.id))
    expect(got.id == task.id, 'tenant GetTask returned another task')
    await expect_error(TaskNotFoundError, b.blocking.get_task(GetTaskRequest(id=task.id)))
    listed = await b.blocking.list_tasks(ListTasksRequest(tenant=tenant))
    expect([t.id for t in listed.tasks] == [task.id], f'tenant list {[t.id for t in listed.tasks]}')
    return f'task visible under {tenant} only'


async def check_strict_card(base_url: str) -> str:
    """The card a 1.0 client gets (it sends `A2A-Version: 1.0`, as the SDK's ClientFactory does)
    parses as the SDK's own generated `AgentCard` WITHOUT ignoring unknown fields: it has no
    member outside the v1.0 schema, whose objects are all `additionalProperties: false` (a
    server with v0.3 on adds v0.3's members only for clients that send no 1.x version)."""
    headers = {VERSION_HEADER: PROTOCOL_VERSION_CURRENT}
    async with httpx.AsyncClient(headers=headers, timeout=CHECK_TIMEOUT) as http:
        response = await http.get(f'{base_url}/.well-known/agent-card.json')
        response.raise_for_status()
        card = json_format.ParseDict(response.json(), AgentCard())
    return f'{len(card.supported_interfaces)} interfaces, no member outside the v1.0 schema'


async def check_idle_stream(base_url: str, binding: str) -> str:
    """A subscription that stays silent longer than the server's SSE keep-alive interval (15 s).

    The SDK's default httpx client has a 5 s read timeout, which ends any SSE stream that is
    silent for 5 s (A2AClientTimeoutError); long-lived streams need a client without a read
    timeout, passed through ClientConfig.httpx_client as here.
    """
    http = httpx.AsyncClient(timeout=httpx.Timeout(10.0, read=None))
    b = Binding(base_url, binding, httpx_client=http)
    try:
        await b.open()
        task = await b.start_slow()
        stream = b.streaming.subscribe(SubscribeToTaskRequest(id=task.id))
        first = await anext(stream)
        expect(first.HasField('task'), f'first event is {first.WhichOneof("payload")}, want task')
        reader = asyncio.create_task(anext(stream))
        await asyncio.sleep(IDLE_SECONDS)
        expect(not reader.done(), f'stream yielded or failed while idle: {reader}')
        await b.cancel(task.id)
        ev = await reader
        rest = [ev, *[e async for e in stream]]
        last = rest[-1]
        expect(
            last.HasField('status_update') and last.status_update.status.state == TaskState.TASK_STATE_CANCELED,
            f'stream ended with {[e.WhichOneof("payload") for e in rest]}, want a final CANCELED status',
        )
        return f'silent {IDLE_SECONDS:.0f} s (past the 15 s SSE keep-alive), then CANCELED arrived'
    finally:
        await b.close()
        await http.aclose()


CHECKS: list[tuple[str, Callable[[Binding], Awaitable[str]]]] = [
    ('factory-selects-binding', check_factory),
    ('send-blocking', check_send_blocking),
    ('send-return-immediately', check_return_immediately),
    ('direct-reply', check_direct_reply),
    ('streaming', check_streaming),
    ('get-task-history-length', check_get_task_history),
    ('list-tasks-paging', check_list_tasks_paging),
    ('list-tasks-filters', check_list_tasks_filters),
    ('cancel', check_cancel),
    ('subscribe', check_subscribe),
    ('push-config-crud', check_push_config_crud),
    ('push-config-inline', check_push_config_inline),
    ('error-unknown-task', check_unknown_task),
    ('error-cancel-completed', check_cancel_completed),
    ('error-wrong-version', check_wrong_version),
    ('error-content-type-refused', check_refuse),
    ('terminal-failed-rejected', check_fail_and_reject),
    ('auth-required', check_auth_required),
    ('stream-errors', check_stream_errors),
    ('tenant-scoping', check_tenant),
]


def load_expected_differences(path: str, client: str) -> dict[tuple[str, str], tuple[str, str]]:
    """The rows of `path` for `client` (or `*`): (binding or `*`, check) -> (fails with, why)."""
    rows: dict[tuple[str, str], tuple[str, str]] = {}
    with open(path, encoding='utf-8') as f:
        for line in f:
            if not line.startswith('|'):
                continue
            cells = [c.strip() for c in line.strip().strip('|').split('|')]
            if len(cells) != 5 or cells[0] == 'client' or set(cells[0]) <= set('-: '):
                continue
            who, binding, check, fails_with, why = cells
            if who in (client, '*'):
                rows[(binding.strip('`'), check.strip('`'))] = (fails_with.strip('`'), why)
    return rows


class Results:
    def __init__(self, label: str = 'python', expected: dict[tuple[str, str], tuple[str, str]] | None = None) -> None:
        self.passed = 0
        self.failed = 0
        self.label = label
        self.expected = expected or {}
        self.used: set[tuple[str, str]] = set()

    def expectation(self, binding: str, name: str) -> tuple[str, str] | None:
        for key in ((binding, name), ('*', name)):
            if key in self.expected:
                self.used.add(key)
                return self.expected[key]
        return None

    async def run_check(self, binding: str, name: str, check: Callable[[], Awaitable[str]], timeout: float) -> None:
        label = self.label
        differs = self.expectation(binding, name)
        if differs is not None:
            timeout = min(timeout, DIFFERENCE_TIMEOUT)
        start = time.monotonic()
        try:
            detail = await asyncio.wait_for(check(), timeout)
        except Exception as e:  # noqa: BLE001
            kind = 'timeout' if isinstance(e, TimeoutError) else type(e).__name__
            if differs is not None and differs[0] in f'{kind}: {e}':
                self.passed += 1
                print(f'ok   {label} {binding} {name}: expected difference ({differs[1]}): {kind}: {short(e)}', flush=True)
                return
            self.failed += 1
            want = f' (expected to fail with {differs[0]!r})' if differs is not None else ''
            print(f'FAIL {label} {binding} {name}{want}: {kind}: {e}', flush=True)
            if os.environ.get('INTEROP_VERBOSE') and not isinstance(e, CheckFailed):
                traceback.print_exc()
        else:
            ms = (time.monotonic() - start) * 1000
            if differs is not None:
                self.failed += 1
                print(f'FAIL {label} {binding} {name}: passed, but is listed as an expected difference '
                      f'(fails with {differs[0]!r}): {detail}', flush=True)
                return
            self.passed += 1
            print(f'ok   {label} {binding} {name} ({ms:.0f} ms): {detail}', flush=True)

    def unused_rows(self) -> None:
        for binding, name in sorted(set(self.expected) - self.used):
            self.failed += 1
            print(f'FAIL {self.label} expected-differences: the row ({binding}, {name}) matches no check run', flush=True)


async def run(base_url: str, bindings: list[str], only: set[str], results: Results) -> tuple[int, int]:
    # The idle-stream checks wait IDLE_SECONDS each: run them alongside everything else.
    idle = [
        asyncio.create_task(
            results.run_check(
                binding,
                'idle-stream',
                lambda binding=binding: check_idle_stream(base_url, binding),
                IDLE_SECONDS + CHECK_TIMEOUT,
            )
        )
        for binding in bindings
        if not only or 'idle-stream' in only
    ]
    if not only or 'strict-card' in only:
        await results.run_check('card', 'strict-card', lambda: check_strict_card(base_url), CHECK_TIMEOUT)
    for binding in bindings:
        b = Binding(base_url, binding)
        try:
            await asyncio.wait_for(b.open(), CHECK_TIMEOUT)
        except Exception as e:  # noqa: BLE001
            print(f'FAIL {results.label} {binding} client-from-card: {type(e).__name__}: {e}', flush=True)
            results.failed += 1
            continue
        try:
            for name, check in CHECKS:
                if not only or name in only:
                    await results.run_check(binding, name, lambda check=check: check(b), CHECK_TIMEOUT)
        finally:
            await b.close()
    await asyncio.gather(*idle)
    if not only:
        results.unused_rows()
    return results.passed, results.failed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('base_url', help='server origin, e.g. http://127.0.0.1:8080')
    parser.add_argument('--binding', action='append', choices=BINDINGS, help='default: all three')
    parser.add_argument('--check', action='append', default=[], help='run only these checks')
    parser.add_argument('--label', default='python', help='the name in the output lines')
    parser.add_argument(
        '--expect-differences', metavar='FILE', help='checks that must fail, and how (see above)'
    )
    args = parser.parse_args()
    label = args.label
    expected = load_expected_differences(args.expect_differences, 'python') if args.expect_differences else {}

    # Fail fast (and clearly) when the server is not there at all.
    try:
        httpx.get(f'{args.base_url}/.well-known/agent-card.json', timeout=5).raise_for_status()
    except Exception as e:  # noqa: BLE001
        print(f'FAIL {label} agent-card: {e}', flush=True)
        passed, failed = 0, 1
    else:
        results = Results(label, expected)
        passed, failed = asyncio.run(run(args.base_url, args.binding or BINDINGS, set(args.check), results))

    if os.environ.get('INTEROP_SUBTOTAL'):
        print(f'{label} subtotal passed={passed} failed={failed}', flush=True)
    else:
        print(f'interop: {passed} passed, {failed} failed', flush=True)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
