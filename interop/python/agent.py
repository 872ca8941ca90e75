"""The demo agent of Trident's behaviour suite, built only from the official A2A Python SDK.

Serves one agent over all three A2A v1.0 bindings with the SDK's own server components:
JSON-RPC (`create_jsonrpc_routes`, POST /) and HTTP+JSON (`create_rest_routes`, at the origin)
on one Starlette app run by uvicorn, gRPC (`GrpcHandler`) on a `grpc.aio` server on a second
port, and the agent card (`create_agent_card_routes`) at /.well-known/agent-card.json listing
the three interfaces. Requests go through one `DefaultRequestHandler` with the in-memory task
and push-configuration stores.

The behaviour matches Trident's `Demo` agent (crates/trident-core/src/agents.rs), i.e. the
conformance script (docs/conformance-script.md), chosen by the first word of the task's first
user message:

  conformance-script  the handshake: a direct Message "conformance-script 1"
  reply ...   a direct Message (no task) echoing the text
  input       INPUT_REQUIRED "What is your name?"; the follow-up completes with artifact
              "greeting" = "Hello, <text>!"
  auth        AUTH_REQUIRED; the follow-up completes (echo)
  slow        WORKING until canceled (completes after 60 s otherwise)
  stream N    WORKING, N chunks of artifact "stream" (append / lastChunk), COMPLETED
  fail        WORKING, then FAILED with the message "the demo agent was asked to fail"
  refuse      ContentTypeNotSupportedError raised before any event
  reject      REJECTED
  anything    COMPLETED with one artifact "echo" holding the user's text

Callers: `Authorization: Bearer token-<name>` authenticates as <name> (anything else is
anonymous), like the test servers of Trident's suite; tasks are scoped by (tenant, user) through
the stores' `owner_resolver` hook.

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
from starlette.authentication import (
    AuthCredentials,
    AuthenticationBackend,
    SimpleUser,
)
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware

from a2a.auth.user import UnauthenticatedUser, User
from a2a.helpers import new_text_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.context import ServerCallContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import (
    DefaultGrpcServerCallContextBuilder,
    DefaultRequestHandler,
    GrpcHandler,
)
from a2a.server.routes import (
    create_agent_card_routes,
    create_jsonrpc_routes,
    create_rest_routes,
)
from a2a.server.tasks import (
    BasePushNotificationSender,
    InMemoryPushNotificationConfigStore,
    InMemoryTaskStore,
    TaskUpdater,
)
from a2a.types import a2a_pb2_grpc
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Task,
    TaskState,
    TaskStatus,
)
from a2a.utils.errors import ContentTypeNotSupportedError


QUESTION = 'What is your name?'
SCRIPT_ANSWER = 'conformance-script 1'
SIGN_IN = 'Sign in at the link I sent you'
FAILURE = 'the demo agent was asked to fail'
SLOW_TIMEOUT_SECONDS = 60.0
STREAM_PAUSE_SECONDS = 0.002


def first_turn_text(context: RequestContext) -> str:
    """The text that picks the behaviour: the task's first user message, else this one."""
    task = context.current_task
    if task is not None and task.history:
        first = task.history[0]
        return '\n'.join(p.text for p in first.parts if p.HasField('text'))
    return context.get_user_input()


class DemoExecutor(AgentExecutor):
    """Every demo behaviour, picked by the first word of the first user message."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        words = first_turn_text(context).split()
        verb = words[0] if words else ''
        text = context.get_user_input()

        if verb == 'conformance-script' and context.current_task is None:
            # The conformance script's handshake (docs/conformance-script.md).
            await event_queue.enqueue_event(
                new_text_message(SCRIPT_ANSWER, context_id=context.context_id)
            )
            return
        if verb == 'reply':
            # A direct reply: no task, so the message carries only the context id.
            await event_queue.enqueue_event(
                new_text_message(text, context_id=context.context_id)
            )
            return
        if verb == 'refuse':
            raise ContentTypeNotSupportedError(
                message='the demo agent refuses this content'
            )

        task = context.current_task
        if task is None:
            # Built from the ids the SDK assigned. (`new_task_from_user_message` raises
            # ValueError on a ROLE_AGENT message, which would turn into an internal error and
            # hide what the SDK's request handler itself accepts.)
            task = Task(
                id=context.task_id,
                context_id=context.context_id,
                status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
                history=[context.message],
            )
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        first_turn = context.current_task is None

        def agent_text(s: str):
            return updater.new_agent_message([new_text_part(s)])

        if verb == 'input' and first_turn:
            await updater.requires_input(agent_text(QUESTION))
        elif verb == 'input':
            await updater.add_artifact(
                [new_text_part(f'Hello, {text}!')], name='greeting'
            )
            await updater.complete()
        elif verb == 'auth' and first_turn:
            await updater.requires_auth(agent_text(SIGN_IN))
        elif verb == 'slow':
            await updater.start_work()
            # Cancellation cancels this coroutine; `cancel` below writes CANCELED.
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
                    [new_text_part(f'chunk {i} of {text}')],
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
            await updater.add_artifact([new_text_part(text)], name='echo')
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
            return None  # anonymous: the SDK's context builder sees no `user`
        return AuthCredentials(['authenticated']), SimpleUser(name)


class GrpcContextBuilder(DefaultGrpcServerCallContextBuilder):
    def build_user(self, context: grpc.aio.ServicerContext) -> User:
        for key, value in context.invocation_metadata() or ():
            if key.lower() == 'authorization':
                if isinstance(value, bytes):
                    value = value.decode('utf-8', 'replace')
                name = name_from_authorization(value)
                if name is not None:
                    return NamedUser(name)
        return UnauthenticatedUser()


def tenant_and_user(context: ServerCallContext) -> str:
    """Owner scope for the stores: another tenant or user never sees a task."""
    return f'{context.tenant}\x1f{context.user.user_name}'


# ---- serving ----


def agent_card(host: str, port: int, grpc_port: int) -> AgentCard:
    origin = f'http://{host}:{port}'
    return AgentCard(
        name='Demo (a2a-sdk Python)',
        description="Trident's demo agent, built with the official A2A Python SDK",
        version='1.0.0',
        supported_interfaces=[
            AgentInterface(
                url=f'{origin}/', protocol_binding='JSONRPC', protocol_version='1.0'
            ),
            AgentInterface(
                url=origin, protocol_binding='HTTP+JSON', protocol_version='1.0'
            ),
            AgentInterface(
                url=f'{host}:{grpc_port}',
                protocol_binding='GRPC',
                protocol_version='1.0',
            ),
        ],
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


async def serve(
    host: str, port: int, grpc_port: int, watch_stdin: bool, jsonrpc_only: bool = False
) -> None:
    # Bind both listeners first so the card can name the real ports (port 0 = any free one).
    grpc_server = grpc.aio.server()
    grpc_port = grpc_server.add_insecure_port(f'{host}:{grpc_port}')
    if grpc_port == 0:
        raise SystemExit(f'cannot bind gRPC on {host}')
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    port = sock.getsockname()[1]

    card = agent_card(host, port, grpc_port)
    if jsonrpc_only:
        # An agent that speaks one binding (what `trident gateway` fronts in its tests).
        keep = [i for i in card.supported_interfaces if i.protocol_binding == 'JSONRPC']
        del card.supported_interfaces[:]
        card.supported_interfaces.extend(keep)
    push_configs = InMemoryPushNotificationConfigStore(owner_resolver=tenant_and_user)
    webhook_client = httpx.AsyncClient(timeout=10.0)
    handler = DefaultRequestHandler(
        agent_executor=DemoExecutor(),
        task_store=InMemoryTaskStore(owner_resolver=tenant_and_user),
        agent_card=card,
        push_config_store=push_configs,
        push_sender=BasePushNotificationSender(webhook_client, push_configs),
    )

    a2a_pb2_grpc.add_A2AServiceServicer_to_server(
        GrpcHandler(handler, context_builder=GrpcContextBuilder()), grpc_server
    )
    app = Starlette(
        routes=[
            # Order matters: the REST routes end with a catch-all `/{tenant}` mount.
            *create_agent_card_routes(card),
            *create_jsonrpc_routes(handler, rpc_url='/'),
            *([] if jsonrpc_only else create_rest_routes(handler)),
        ],
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
    lines += [f'  {i.protocol_binding:<10} {i.url}' for i in card.supported_interfaces]
    print('\n'.join(lines), flush=True)

    await asyncio.wait(
        [asyncio.create_task(stop.wait()), http_task],
        return_when=asyncio.FIRST_COMPLETED,
    )
    http_server.should_exit = True
    await grpc_server.stop(grace=0.5)
    await http_task
    await handler.aclose()
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
    asyncio.run(
        serve(args.host, args.port, args.grpc_port, args.exit_on_stdin_eof, args.jsonrpc_only)
    )


if __name__ == '__main__':
    main()
