"""The demo agent of Trident's behaviour suite, built only from the official A2A **v0.3** Python SDK.

The v0.3 twin of interop/python/agent.py (same commands, same replies), on `a2a-sdk==0.3.26`:
JSON-RPC (`A2AStarletteApplication`, POST /) and HTTP+JSON (`RESTAdapter`'s `/v1/...` routes,
mounted on the same Starlette app) run by uvicorn, gRPC (`GrpcHandler`, v0.3's service
`a2a.v1.A2AService`) on a `grpc.aio` server on a second port, and a v0.3 agent card at
/.well-known/agent-card.json (`url` + `preferredTransport: JSONRPC`, `additionalInterfaces`
listing all three, `protocolVersion: 0.3.0`). Requests go through one `DefaultRequestHandler`
with the SDK's in-memory push-configuration store and a task store that scopes tasks by caller.

Chosen by the first word of the task's first user message (docs/conformance-script.md):

  conformance-script  the handshake: a direct Message "conformance-script 1"
  reply ...   a direct Message (no task) echoing the text
  input       input-required "What is your name?"; the follow-up completes with artifact
              "greeting" = "Hello, <text>!"
  auth        auth-required; the follow-up completes (echo)
  slow        working until canceled (completes after 60 s otherwise)
  stream N    working, N chunks of artifact "stream" (append / lastChunk), completed
  fail        working, then failed with the message "the demo agent was asked to fail"
  refuse      ContentTypeNotSupportedError raised before any event
  reject      rejected
  anything    completed with one artifact "echo" holding the user's text

Callers: `Authorization: Bearer token-<name>` authenticates as <name> (anything else is
anonymous); another caller's task is "not found" (`OwnedTaskStore`). v0.3 has no tenants.

Usage: python agent.py --host 127.0.0.1 --port P [--grpc-port Q] [--exit-on-stdin-eof]
Port 0 (the default for both ports) picks a free port. Once both listeners are bound it prints
one line `agent card <url>` on stdout (and the interfaces after it), then serves until
SIGINT/SIGTERM (or, with --exit-on-stdin-eof, until its stdin closes).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import socket
import sys
import threading

import grpc
import httpx
import uvicorn

from starlette.applications import Starlette
from starlette.authentication import AuthCredentials, AuthenticationBackend, SimpleUser
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.routing import Route

from a2a.auth.user import UnauthenticatedUser, User
from a2a.grpc import a2a_pb2_grpc
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.apps import A2AStarletteApplication
from a2a.server.apps.rest.rest_adapter import RESTAdapter
from a2a.server.context import ServerCallContext
from a2a.server.events import EventQueue, InMemoryQueueManager
from a2a.server.request_handlers import DefaultRequestHandler, GrpcHandler
from a2a.server.request_handlers.grpc_handler import DefaultCallContextBuilder
from a2a.server.tasks import (
    BasePushNotificationSender,
    InMemoryPushNotificationConfigStore,
    TaskStore,
    TaskUpdater,
)
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    ContentTypeNotSupportedError,
    Part,
    Task,
    TaskState,
    TaskStatus,
    TextPart,
    TransportProtocol,
)
from a2a.utils import new_agent_text_message
from a2a.utils.errors import ServerError


QUESTION = 'What is your name?'
SCRIPT_ANSWER = 'conformance-script 1'
SIGN_IN = 'Sign in at the link I sent you'
FAILURE = 'the demo agent was asked to fail'
SLOW_TIMEOUT_SECONDS = 60.0
STREAM_PAUSE_SECONDS = 0.002


def text_part(text: str) -> Part:
    return Part(root=TextPart(text=text))


def message_text(message) -> str:  # noqa: ANN001 - a2a.types.Message
    return '\n'.join(p.root.text for p in message.parts if isinstance(p.root, TextPart))


def first_turn_text(context: RequestContext) -> str:
    """The text that picks the behaviour: the task's first user message, else this one."""
    task = context.current_task
    if task is not None and task.history:
        return message_text(task.history[0])
    return context.get_user_input()


class DemoExecutor(AgentExecutor):
    """Every demo behaviour, picked by the first word of the first user message."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        words = first_turn_text(context).split()
        verb = words[0] if words else ''
        text = context.get_user_input()

        if verb == 'conformance-script' and context.current_task is None:
            await event_queue.enqueue_event(
                new_agent_text_message(SCRIPT_ANSWER, context_id=context.context_id)
            )
            return
        if verb == 'reply':
            # A direct reply: no task, so the message carries only the context id.
            await event_queue.enqueue_event(
                new_agent_text_message(text, context_id=context.context_id)
            )
            return
        if verb == 'refuse':
            raise ServerError(
                error=ContentTypeNotSupportedError(message='the demo agent refuses this content')
            )

        task = context.current_task
        if task is None:
            task = Task(
                id=context.task_id,
                context_id=context.context_id,
                status=TaskStatus(state=TaskState.submitted),
                history=[context.message],
            )
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        first_turn = context.current_task is None

        def agent_text(s: str):
            return updater.new_agent_message([text_part(s)])

        # Interrupted states end this turn's stream: v0.3 marks that with `final: true`.
        if verb == 'input' and first_turn:
            await updater.requires_input(agent_text(QUESTION), final=True)
        elif verb == 'input':
            await updater.add_artifact([text_part(f'Hello, {text}!')], artifact_id='greeting', name='greeting')
            await updater.complete()
        elif verb == 'auth' and first_turn:
            await updater.requires_auth(agent_text(SIGN_IN), final=True)
        elif verb == 'slow':
            await updater.start_work()
            # Cancellation cancels this coroutine; `cancel` below writes canceled.
            await asyncio.sleep(SLOW_TIMEOUT_SECONDS)
            await updater.complete()
        elif verb == 'stream':
            chunks = 3
            if len(words) > 1 and words[1].isdigit():
                chunks = int(words[1])
            await updater.start_work()
            artifact_id = f'{task.id}-stream'
            for i in range(chunks):
                await asyncio.sleep(STREAM_PAUSE_SECONDS)
                await updater.add_artifact(
                    [text_part(f'chunk {i} of {text}')],
                    artifact_id=artifact_id,
                    name='stream',
                    append=i > 0,
                    last_chunk=i + 1 == chunks,
                )
            await updater.complete()
        elif verb == 'fail':
            await updater.start_work()
            await updater.failed(agent_text(FAILURE))
        elif verb == 'reject':
            await updater.reject(agent_text('I do not do that'))
        else:
            await updater.add_artifact([text_part(text)], artifact_id='echo', name='echo')
            await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        if task is None:
            return
        await TaskUpdater(event_queue, task.id, task.context_id).cancel()


# ---- callers: `Bearer token-<name>` is <name>, like Trident's test servers ----


class NamedUser(User):
    def __init__(self, name: str) -> None:
        self._name = name

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def user_name(self) -> str:
        return self._name


def name_from_authorization(value: str | None) -> str | None:
    if not value:
        return None
    scheme, _, token = value.partition(' ')
    if scheme.lower() != 'bearer' or not token.startswith('token-'):
        return None
    return token.removeprefix('token-') or None


class TokenBackend(AuthenticationBackend):
    async def authenticate(self, conn):  # noqa: ANN001, ANN201
        name = name_from_authorization(conn.headers.get('authorization'))
        if name is None:
            return None  # anonymous
        return AuthCredentials(['authenticated']), SimpleUser(name)


class GrpcContextBuilder(DefaultCallContextBuilder):
    def build(self, context: grpc.aio.ServicerContext) -> ServerCallContext:
        call = super().build(context)
        for key, value in context.invocation_metadata() or ():
            if key.lower() == 'authorization':
                if isinstance(value, bytes):
                    value = value.decode('utf-8', 'replace')
                name = name_from_authorization(value)
                if name is not None:
                    call.user = NamedUser(name)
        return call


def owner(context: ServerCallContext | None) -> str:
    user = context.user if context is not None else UnauthenticatedUser()
    return user.user_name if user.is_authenticated else ''


class OwnedTaskStore(TaskStore):
    """In memory, each task visible to the caller that created it only.

    v0.3's InMemoryTaskStore has no owner hook (1.0's has `owner_resolver`); the SDK passes the
    call context to every task-store call a request makes, which is all this needs.
    """

    def __init__(self) -> None:
        self._tasks: dict[str, tuple[str, Task]] = {}
        self._lock = asyncio.Lock()

    async def save(self, task: Task, context: ServerCallContext | None = None) -> None:
        async with self._lock:
            held = self._tasks.get(task.id)
            who = owner(context) if held is None else held[0]
            self._tasks[task.id] = (who, task.model_copy(deep=True))

    async def get(self, task_id: str, context: ServerCallContext | None = None) -> Task | None:
        async with self._lock:
            held = self._tasks.get(task_id)
            if held is None or held[0] != owner(context):
                return None
            return held[1].model_copy(deep=True)

    async def delete(self, task_id: str, context: ServerCallContext | None = None) -> None:
        async with self._lock:
            held = self._tasks.get(task_id)
            if held is not None and held[0] == owner(context):
                del self._tasks[task_id]


class TurnQueueManager(InMemoryQueueManager):
    """One event queue per turn of a task: a follow-up waits for the previous turn's cleanup.

    SDK 0.3.26 answers a blocking send that reaches `auth-required` at once and cleans that
    turn up in the background (`_cleanup_producer`: close and drop the task's queue). A
    follow-up arriving meanwhile taps the old queue (`create_or_tap`), so its events go to a
    queue that is about to close and its own cleanup fails with `NoTaskQueue`, an internal
    error to the caller (seen about once in 15 quick follow-ups). Waiting here for the old
    queue to be dropped gives the follow-up a queue of its own; the 1.0 SDK likewise runs a
    task's turns one after another.
    """

    def __init__(self) -> None:
        super().__init__()
        self._dropped: dict[str, asyncio.Event] = {}

    async def create_or_tap(self, task_id: str) -> EventQueue:
        while True:
            async with self._lock:
                if task_id not in self._task_queue:
                    queue = EventQueue()
                    self._task_queue[task_id] = queue
                    self._dropped[task_id] = asyncio.Event()
                    return queue
                dropped = self._dropped.get(task_id)
            if dropped is None:  # a queue registered by `add`: the SDK's own behaviour
                return await super().create_or_tap(task_id)
            await dropped.wait()

    async def close(self, task_id: str) -> None:
        async with self._lock:
            dropped = self._dropped.pop(task_id, None)
        try:
            await super().close(task_id)
        finally:
            if dropped is not None:
                dropped.set()


# ---- serving ----


def agent_card(host: str, port: int, grpc_port: int, jsonrpc_only: bool) -> AgentCard:
    origin = f'http://{host}:{port}'
    interfaces = [AgentInterface(transport=TransportProtocol.jsonrpc, url=f'{origin}/')]
    if not jsonrpc_only:
        interfaces += [
            AgentInterface(transport=TransportProtocol.http_json, url=origin),
            AgentInterface(transport=TransportProtocol.grpc, url=f'{host}:{grpc_port}'),
        ]
    return AgentCard(
        name='Demo (a2a-sdk 0.3 Python)',
        description="Trident's demo agent, built with the official A2A Python SDK 0.3",
        version='1.0.0',
        protocol_version='0.3.0',
        url=f'{origin}/',
        preferred_transport=TransportProtocol.jsonrpc,
        additional_interfaces=interfaces,
        capabilities=AgentCapabilities(streaming=True, push_notifications=True),
        default_input_modes=['text/plain'],
        default_output_modes=['text/plain'],
        skills=[
            AgentSkill(
                id='demo',
                name='Demo',
                description='reply, input, auth, slow, stream N, fail, refuse, reject, echo',
                tags=['demo'],
                examples=['stream 3', 'input'],
            )
        ],
    )


def stop_on_stdin_eof(loop: asyncio.AbstractEventLoop, stop: asyncio.Event) -> None:
    """Sets `stop` once stdin reaches EOF, i.e. when the parent that holds its pipe is gone."""

    def watch() -> None:
        while sys.stdin.buffer.read(4096):
            pass
        loop.call_soon_threadsafe(stop.set)

    threading.Thread(target=watch, name='stdin-eof', daemon=True).start()


async def serve(host: str, port: int, grpc_port: int, watch_stdin: bool, jsonrpc_only: bool) -> None:
    # Bind both listeners first so the card can name the real ports (port 0 = any free one).
    grpc_server = grpc.aio.server()
    grpc_port = grpc_server.add_insecure_port(f'{host}:{grpc_port}')
    if grpc_port == 0:
        raise SystemExit(f'cannot bind gRPC on {host}')
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    port = sock.getsockname()[1]

    card = agent_card(host, port, grpc_port, jsonrpc_only)
    push_configs = InMemoryPushNotificationConfigStore()
    webhook_client = httpx.AsyncClient(timeout=10.0)
    handler = DefaultRequestHandler(
        agent_executor=DemoExecutor(),
        task_store=OwnedTaskStore(),
        queue_manager=TurnQueueManager(),
        push_config_store=push_configs,
        push_sender=BasePushNotificationSender(webhook_client, push_configs),
    )

    a2a_pb2_grpc.add_A2AServiceServicer_to_server(
        GrpcHandler(card, handler, context_builder=GrpcContextBuilder()), grpc_server
    )
    # JSON-RPC at POST / and the card; the HTTP+JSON routes (`/v1/...`) of the SDK's REST
    # adapter on the same app (the SDK wraps them in FastAPI only to register them).
    routes = A2AStarletteApplication(agent_card=card, http_handler=handler).routes(rpc_url='/')
    if not jsonrpc_only:
        rest = RESTAdapter(agent_card=card, http_handler=handler)
        routes += [Route(path, endpoint, methods=[method]) for (path, method), endpoint in rest.routes().items()]
    app = Starlette(
        routes=routes,
        middleware=[Middleware(AuthenticationMiddleware, backend=TokenBackend())],
    )
    http_server = uvicorn.Server(
        uvicorn.Config(app, log_level='warning', lifespan='off', timeout_graceful_shutdown=1)
    )

    if not jsonrpc_only:
        await grpc_server.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    if watch_stdin:
        stop_on_stdin_eof(loop, stop)
    http_task = asyncio.create_task(http_server.serve(sockets=[sock]))
    while not http_server.started and not http_task.done():
        await asyncio.sleep(0.01)
    if http_task.done():
        await http_task
        raise SystemExit('the HTTP server did not start')

    lines = [f'agent card http://{host}:{port}/.well-known/agent-card.json']
    lines += [f'  {i.transport:<10} {i.url}' for i in card.additional_interfaces or []]
    print('\n'.join(lines), flush=True)

    await asyncio.wait(
        [asyncio.create_task(stop.wait()), http_task],
        return_when=asyncio.FIRST_COMPLETED,
    )
    http_server.should_exit = True
    await grpc_server.stop(grace=0.5)
    await http_task
    await webhook_client.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--host', default='127.0.0.1')
    parser.add_argument('--port', type=int, default=0, help='JSON-RPC, HTTP+JSON and the card')
    parser.add_argument('--grpc-port', type=int, default=0, help='gRPC (default: any free port)')
    parser.add_argument(
        '--exit-on-stdin-eof',
        action='store_true',
        help='stop when stdin closes (for a parent process that may die without stopping us)',
    )
    parser.add_argument(
        '--jsonrpc-only',
        action='store_true',
        help='serve and advertise only the JSON-RPC binding',
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    asyncio.run(serve(args.host, args.port, args.grpc_port, args.exit_on_stdin_eof, args.jsonrpc_only))


if __name__ == '__main__':
    main()
