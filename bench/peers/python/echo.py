"""The official A2A Python SDK's echo agent (a2a-sdk 1.3.0), a peer of `trident-bench peers`.

HTTP+JSON at the root and JSON-RPC at POST /jsonrpc on one Starlette app served by uvicorn
(one process, its default event loop and HTTP implementation), gRPC (grpc.aio) on a port of its
own in the same process. Every task completes with one artifact `echo` holding the user's text,
like Trident's echo agent. OpenTelemetry is off (bench/peers.sh sets OTEL_SDK_DISABLED and the
SDK's instrumentation switch; no OpenTelemetry SDK is installed, so the API is a no-op).

Usage: python echo.py [--host H]
Prints `listening on HOST:PORT grpc HOST:PORT` once both listeners serve; stops on SIGTERM.
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

from a2a.helpers import new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler, GrpcHandler
from a2a.server.routes import create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
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
        await updater.add_artifact(
            [new_text_part(context.get_user_input())], artifact_id='echo', name='echo'
        )
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        if task is not None:
            await TaskUpdater(event_queue, task.id, task.context_id).cancel()


async def serve(host: str) -> None:
    grpc_server = grpc.aio.server()
    grpc_port = grpc_server.add_insecure_port(f'{host}:0')
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, 0))
    port = sock.getsockname()[1]
    origin = f'http://{host}:{port}'
    card = AgentCard(
        name='Echo (a2a-sdk Python)',
        description='An echo agent built with the official A2A Python SDK',
        version='1.0.0',
        supported_interfaces=[
            AgentInterface(url=f'{origin}/jsonrpc', protocol_binding='JSONRPC', protocol_version='1.0'),
            AgentInterface(url=origin, protocol_binding='HTTP+JSON', protocol_version='1.0'),
            AgentInterface(url=f'{host}:{grpc_port}', protocol_binding='GRPC', protocol_version='1.0'),
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=['text/plain'],
        default_output_modes=['text/plain'],
        skills=[AgentSkill(id='echo', name='Echo', description='echoes', tags=['echo'])],
    )
    handler = DefaultRequestHandler(
        agent_executor=EchoExecutor(), task_store=InMemoryTaskStore(), agent_card=card
    )
    a2a_pb2_grpc.add_A2AServiceServicer_to_server(GrpcHandler(handler), grpc_server)
    app = Starlette(
        routes=[
            *create_jsonrpc_routes(handler, rpc_url='/jsonrpc'),
            *create_rest_routes(handler),
        ],
    )
    http_server = uvicorn.Server(
        uvicorn.Config(app, log_level='warning', access_log=False, lifespan='off')
    )
    await grpc_server.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    http_task = asyncio.create_task(http_server.serve(sockets=[sock]))
    while not http_server.started and not http_task.done():
        await asyncio.sleep(0.01)
    if http_task.done():
        await http_task
        raise SystemExit('the HTTP server did not start')
    print(f'listening on {host}:{port} grpc {host}:{grpc_port}', flush=True)
    await asyncio.wait(
        [asyncio.create_task(stop.wait()), http_task], return_when=asyncio.FIRST_COMPLETED
    )
    http_server.should_exit = True
    await grpc_server.stop(grace=0.5)
    await http_task


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--host', default='127.0.0.1')
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    asyncio.run(serve(args.host))


if __name__ == '__main__':
    main()
