"""An echo agent built only from the official A2A Python SDK, with its interfaces under path
prefixes, for `trident conformance` in interop/run.sh.

JSON-RPC at /a2a/jsonrpc and HTTP+JSON at /a2a/rest (`create_rest_routes(path_prefix=...)`) on
one Starlette app run by uvicorn, gRPC on a port of its own, the card at
/.well-known/agent-card.json. Plain, it completes every task with one artifact echoing the
text (it does not follow the conformance script); with --script it is agent.py's DemoExecutor,
i.e. the conformance script in front of the same echo (docs/conformance-script.md).

Usage: python echo_agent.py [--script] [--host H] [--port P] [--grpc-port Q]
Prints `agent card <url>` once both listeners serve; stops on SIGINT/SIGTERM or stdin EOF.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import socket
import sys

import grpc
import uvicorn
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware

from a2a.helpers import new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler, GrpcHandler
from a2a.server.routes import (
    create_agent_card_routes,
    create_jsonrpc_routes,
    create_rest_routes,
)
from a2a.server.tasks import InMemoryPushNotificationConfigStore, InMemoryTaskStore, TaskUpdater
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

from agent import (
    DemoExecutor,
    GrpcContextBuilder,
    TokenBackend,
    stop_on_stdin_eof,
    tenant_and_user,
)

JSONRPC_PATH = '/a2a/jsonrpc'
REST_PREFIX = '/a2a/rest'


class EchoExecutor(AgentExecutor):
    """Completes every task with one artifact `echo` holding the user's text."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        if task is None:
            task = Task(
                id=context.task_id,
                context_id=context.context_id,
                status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
                history=[context.message],
            )
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.add_artifact([new_text_part(context.get_user_input())], name='echo')
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        if task is not None:
            await TaskUpdater(event_queue, task.id, task.context_id).cancel()


async def serve(host: str, port: int, grpc_port: int, script: bool) -> None:
    grpc_server = grpc.aio.server()
    grpc_port = grpc_server.add_insecure_port(f'{host}:{grpc_port}')
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    port = sock.getsockname()[1]
    origin = f'http://{host}:{port}'
    card = AgentCard(
        name='Echo (a2a-sdk Python)' + (' + conformance script' if script else ''),
        description='An echo agent built with the official A2A Python SDK',
        version='1.0.0',
        supported_interfaces=[
            AgentInterface(
                url=f'{origin}{JSONRPC_PATH}', protocol_binding='JSONRPC', protocol_version='1.0'
            ),
            AgentInterface(
                url=f'{origin}{REST_PREFIX}', protocol_binding='HTTP+JSON', protocol_version='1.0'
            ),
            AgentInterface(url=f'{host}:{grpc_port}', protocol_binding='GRPC', protocol_version='1.0'),
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=True),
        default_input_modes=['text/plain'],
        default_output_modes=['text/plain'],
        skills=[AgentSkill(id='echo', name='Echo', description='echoes', tags=['echo'])],
    )
    handler = DefaultRequestHandler(
        agent_executor=DemoExecutor() if script else EchoExecutor(),
        task_store=InMemoryTaskStore(owner_resolver=tenant_and_user),
        agent_card=card,
        push_config_store=InMemoryPushNotificationConfigStore(owner_resolver=tenant_and_user),
    )
    a2a_pb2_grpc.add_A2AServiceServicer_to_server(
        GrpcHandler(handler, context_builder=GrpcContextBuilder()), grpc_server
    )
    app = Starlette(
        routes=[
            *create_agent_card_routes(card),
            *create_jsonrpc_routes(handler, rpc_url=JSONRPC_PATH),
            *create_rest_routes(handler, path_prefix=REST_PREFIX),
        ],
        middleware=[Middleware(AuthenticationMiddleware, backend=TokenBackend())],
    )
    http_server = uvicorn.Server(
        uvicorn.Config(app, log_level='warning', lifespan='off', timeout_graceful_shutdown=1)
    )
    await grpc_server.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    stop_on_stdin_eof(loop, stop)
    http_task = asyncio.create_task(http_server.serve(sockets=[sock]))
    while not http_server.started and not http_task.done():
        await asyncio.sleep(0.01)
    if http_task.done():
        await http_task
        raise SystemExit('the HTTP server did not start')
    print(f'agent card {origin}/.well-known/agent-card.json', flush=True)
    await asyncio.wait(
        [asyncio.create_task(stop.wait()), http_task], return_when=asyncio.FIRST_COMPLETED
    )
    http_server.should_exit = True
    await grpc_server.stop(grace=0.5)
    await http_task


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--host', default='127.0.0.1')
    parser.add_argument('--port', type=int, default=0)
    parser.add_argument('--grpc-port', type=int, default=0)
    parser.add_argument('--script', action='store_true', help='follow the conformance script')
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    asyncio.run(serve(args.host, args.port, args.grpc_port, args.script))


if __name__ == '__main__':
    main()
