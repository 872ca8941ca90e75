"""Interop checks: the official A2A **v0.3** Python SDK (PyPI `a2a-sdk==0.3.26`) against a running
Trident server's v0.3 compatibility layer.

Usage: python interop_v03.py http://127.0.0.1:PORT [--label NAME] [--push-shape 0.3|1.0]

The SDK's own `A2ACardResolver` reads Trident's (combined) card and its `ClientFactory` builds a
client for each binding it supports (JSONRPC, HTTP+JSON, GRPC). Per binding: blocking send,
streaming send, get with history, cancel, resubscribe, push-config set/get, push delivery to a
configuration set through the SDK (each POST read with the SDK's own `Task` model, the token in
`X-A2A-Notification-Token`; the server must allow webhooks to 127.0.0.1), and the error
cases; over JSON-RPC also push-config list/delete (the v0.3 client has no method for them: raw
requests, answers validated with the SDK's own pydantic models) and an `A2A-Version: 1.0`
request that must be refused. Every check prints one line; the last line is
`python03 subtotal passed=N failed=M` (INTEROP_SUBTOTAL=1) or `interop: N passed, M failed`;
`--label NAME` replaces `python03` in those lines (interop/run.sh also runs this script against
`trident gateway` in front of a 1.0-only agent).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import traceback
import uuid

import httpx

from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.client.errors import A2AClientHTTPError, A2AClientJSONRPCError
from a2a.types import (
    GetTaskPushNotificationConfigParams,
    ListTaskPushNotificationConfigResponse,
    DeleteTaskPushNotificationConfigResponse,
    Message,
    Part,
    PushNotificationConfig,
    Role,
    Task,
    TaskArtifactUpdateEvent,
    TaskIdParams,
    TaskPushNotificationConfig,
    TaskQueryParams,
    TaskState,
    TaskStatusUpdateEvent,
    TextPart,
    TransportProtocol,
)

TIMEOUT = 30.0
LABEL = "python03"
# "0.3", or "1.0" through `trident gateway` in front of a 1.0 agent: the upstream holds the
# configuration as a 1.0 one and notifies in 1.0's shape (docs/interop.md, "A2A v0.3 clients").
PUSH_SHAPE = "0.3"
passed = 0
failed = 0


def report(ok: bool, name: str, detail: str = "") -> None:
    global passed, failed
    if ok:
        passed += 1
        print(f"ok   {LABEL} {name}")
    else:
        failed += 1
        print(f"FAIL {LABEL} {name}: {detail}")


async def check(name: str, coro) -> None:
    try:
        await asyncio.wait_for(coro, TIMEOUT)
        report(True, name)
    except AssertionError as e:
        report(False, name, str(e) or "assertion failed")
    except Exception as e:  # noqa: BLE001
        if os.environ.get("INTEROP_VERBOSE"):
            traceback.print_exc()
        report(False, name, f"{type(e).__name__}: {e}")


def user(text: str, task_id: str | None = None, context_id: str | None = None) -> Message:
    return Message(
        message_id=str(uuid.uuid4()),
        role=Role.user,
        parts=[Part(root=TextPart(text=text))],
        task_id=task_id,
        context_id=context_id,
    )


async def last_task(client, message: Message) -> Task:
    task = None
    async for event in client.send_message(message):
        if isinstance(event, tuple):
            task = event[0]
        else:
            raise AssertionError(f"expected a task, got {event!r}")
    assert task is not None, "no task"
    return task


class Hooks:
    """A webhook receiver on loopback (plain asyncio HTTP/1.1, one request per connection):
    each POST's lower-cased headers and body, queued by path."""

    def __init__(self) -> None:
        self.url = ""
        self.queues: dict[str, asyncio.Queue] = {}
        self.server = None

    def queue(self, path: str) -> asyncio.Queue:
        return self.queues.setdefault(path, asyncio.Queue())

    async def start(self) -> None:
        self.server = await asyncio.start_server(self.serve, "127.0.0.1", 0)
        port = self.server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            path = lines[0].split(" ")[1]
            headers = {}
            for line in lines[1:]:
                if ":" in line:
                    name, value = line.split(":", 1)
                    headers[name.strip().lower()] = value.strip()
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            await writer.drain()
            await self.queue(path).put((headers, body))
        finally:
            writer.close()

    async def next(self, path: str):
        return await asyncio.wait_for(self.queue(path).get(), TIMEOUT)


hooks = Hooks()


async def binding_checks(base: str, card, transport: str, http: httpx.AsyncClient) -> None:
    tag = {"JSONRPC": "jsonrpc", "HTTP+JSON": "rest", "GRPC": "grpc"}[transport]

    def factory(streaming: bool):
        config = ClientConfig(
            streaming=streaming,
            supported_transports=[transport],
            httpx_client=http,
        )
        if transport == "GRPC":
            import grpc

            config.grpc_channel_factory = lambda url: grpc.aio.insecure_channel(url)
        return ClientFactory(config).create(card)

    blocking = factory(False)
    streaming = factory(True)

    async def send_blocking():
        task = await last_task(blocking, user("hello v0.3"))
        assert task.status.state == TaskState.completed, task.status.state
        text = task.artifacts[0].parts[0].root.text
        assert text == "hello v0.3", text

    async def send_direct_message():
        events = [e async for e in blocking.send_message(user("reply hi"))]
        assert len(events) == 1 and isinstance(events[0], Message), events
        assert events[0].role == Role.agent

    async def send_streaming():
        kinds = []
        final = None
        async for task, update in streaming.send_message(user("stream 3 5")):
            if update is not None:
                kinds.append(update.kind)
                if isinstance(update, TaskStatusUpdateEvent):
                    final = update.final
        assert "artifact-update" in kinds, kinds
        assert final is True, f"last status update not final: {kinds}"
        assert task.status.state == TaskState.completed, task.status.state

    async def get_with_history():
        task = await last_task(blocking, user("history please"))
        got = await blocking.get_task(TaskQueryParams(id=task.id, history_length=1))
        assert got.id == task.id
        assert got.history is not None and len(got.history) == 1, got.history

    async def cancel():
        message = user("slow")
        task_id = None
        async for task, _update in streaming.send_message(message):
            task_id = task.id
            break
        assert task_id, "no task"
        canceled = await blocking.cancel_task(TaskIdParams(id=task_id))
        assert canceled.status.state == TaskState.canceled, canceled.status.state

    async def resubscribe():
        task_id = None
        async for task, _update in streaming.send_message(user("slow")):
            task_id = task.id
            break
        assert task_id
        seen = None
        async for task, _update in streaming.resubscribe(TaskIdParams(id=task_id)):
            seen = task
            break
        assert seen is not None and seen.id == task_id
        await blocking.cancel_task(TaskIdParams(id=task_id))

    async def push_set_get():
        task = await last_task(blocking, user("input"))
        assert task.status.state == TaskState.input_required, task.status.state
        config = TaskPushNotificationConfig(
            task_id=task.id,
            push_notification_config=PushNotificationConfig(
                id="cfg-1", url="http://127.0.0.1:9/hook", token="tok"
            ),
        )
        made = await blocking.set_task_callback(config)
        assert made.task_id == task.id, made
        assert made.push_notification_config.url == "http://127.0.0.1:9/hook"
        got = await blocking.get_task_callback(
            GetTaskPushNotificationConfigParams(id=task.id, push_notification_config_id="cfg-1")
        )
        assert got.push_notification_config.id == "cfg-1", got
        assert got.push_notification_config.url == "http://127.0.0.1:9/hook", got

    async def push_delivery():
        # The configuration is set through the v0.3 SDK on this binding: Trident must POST
        # what a v0.3 agent's sender POSTs (the Task, in the SDK's own model) to it.
        task = await last_task(blocking, user("input"))
        path = f"/{tag}-{task.id}"
        config = TaskPushNotificationConfig(
            task_id=task.id,
            push_notification_config=PushNotificationConfig(
                id="cfg-push", url=hooks.url + path, token=f"tok-{tag}"
            ),
        )
        await blocking.set_task_callback(config)
        done = await last_task(blocking, user("Ada", task_id=task.id, context_id=task.context_id))
        assert done.status.state == TaskState.completed, done.status.state
        while PUSH_SHAPE == "1.0":
            # A 1.0 StreamResponse: exactly one of task / statusUpdate / artifactUpdate.
            headers, body = await hooks.next(path)
            assert headers.get("a2a-notification-token") == f"tok-{tag}", headers
            assert headers.get("content-type", "").startswith("application/a2a+json"), headers
            posted = json.loads(body)
            kinds = [k for k in ("task", "statusUpdate", "artifactUpdate", "message") if k in posted]
            assert len(kinds) == 1, posted
            event = posted[kinds[0]]
            assert event.get("id", event.get("taskId")) == task.id, posted
            if event.get("status", {}).get("state") == "TASK_STATE_COMPLETED":
                return
        while True:
            headers, body = await hooks.next(path)
            assert headers.get("x-a2a-notification-token") == f"tok-{tag}", headers
            assert headers.get("content-type", "").startswith("application/json"), headers
            posted = Task.model_validate_json(body)
            assert posted.id == task.id, posted
            if posted.status.state == TaskState.completed:
                break
        text = posted.artifacts[0].parts[0].root.text
        assert text == "Hello, Ada!", text

    async def unknown_task():
        try:
            await blocking.get_task(TaskQueryParams(id="no-such-task"))
        except A2AClientJSONRPCError as e:
            assert e.error.code == -32001, e.error
            return
        except A2AClientHTTPError as e:
            assert e.status_code == 404, e.status_code
            return
        except Exception as e:  # gRPC: the SDK raises the status as is
            assert "not found" in str(e).lower() or "NOT_FOUND" in str(e), repr(e)
            return
        raise AssertionError("no error for an unknown task")

    async def cancel_completed():
        task = await last_task(blocking, user("done soon"))
        try:
            await blocking.cancel_task(TaskIdParams(id=task.id))
        except A2AClientJSONRPCError as e:
            assert e.error.code == -32002, e.error
            return
        except A2AClientHTTPError as e:
            assert e.status_code == 400, e.status_code
            return
        except Exception as e:  # noqa: BLE001  (gRPC: the status as is)
            assert "FAILED_PRECONDITION" in str(e), repr(e)
            return
        raise AssertionError("a completed task was canceled")

    for name, coro in [
        ("send-blocking", send_blocking),
        ("send-direct-message", send_direct_message),
        ("send-streaming", send_streaming),
        ("get-with-history", get_with_history),
        ("cancel", cancel),
        ("resubscribe", resubscribe),
        ("push-config-set-get", push_set_get),
        (f"push-delivery ({'v0.3 Task' if PUSH_SHAPE == '0.3' else '1.0 StreamResponse'} body)", push_delivery),
        ("error-task-not-found", unknown_task),
        ("error-task-not-cancelable", cancel_completed),
    ]:
        await check(f"{tag} {name}", coro())


async def jsonrpc_raw_checks(base: str, http: httpx.AsyncClient) -> None:
    async def call(method: str, params: dict, headers: dict | None = None) -> dict:
        body = {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}
        r = await http.post(base + "/", json=body, headers=headers or {})
        return r.json()

    async def list_delete():
        sent = await call(
            "message/send",
            {"message": user("input").model_dump(mode="json", exclude_none=True)},
        )
        task = Task.model_validate(sent["result"])
        for cid in ("a", "b"):
            made = await call(
                "tasks/pushNotificationConfig/set",
                {"taskId": task.id, "pushNotificationConfig": {"id": cid, "url": "http://127.0.0.1:9/h"}},
            )
            assert "result" in made, made
        listed = ListTaskPushNotificationConfigResponse.model_validate(
            await call("tasks/pushNotificationConfig/list", {"id": task.id})
        )
        ids = sorted(c.push_notification_config.id for c in listed.root.result)
        assert ids == ["a", "b"], ids
        deleted = DeleteTaskPushNotificationConfigResponse.model_validate(
            await call("tasks/pushNotificationConfig/delete", {"id": task.id, "pushNotificationConfigId": "a"})
        )
        assert deleted.root.result is None, deleted
        listed = ListTaskPushNotificationConfigResponse.model_validate(
            await call("tasks/pushNotificationConfig/list", {"id": task.id})
        )
        assert [c.push_notification_config.id for c in listed.root.result] == ["b"]

    async def version_mismatch():
        reply = await call(
            "tasks/get", {"id": "whatever"}, headers={"A2A-Version": "1.0"}
        )
        assert reply.get("error", {}).get("code") == -32600, reply
        assert "0.3" in reply["error"]["message"], reply

    async def invalid_params():
        reply = await call("message/send", {"message": {"messageId": "m", "role": "robot", "parts": []}})
        assert reply.get("error", {}).get("code") == -32602, reply

    async def method_not_found():
        reply = await call("tasks/list", {})
        assert reply.get("error", {}).get("code") == -32601, reply

    for name, coro in [
        ("push-config-list-delete", list_delete),
        ("error-version-1.0-on-v0.3-method", version_mismatch),
        ("error-invalid-params", invalid_params),
        ("error-method-not-found", method_not_found),
    ]:
        await check(f"jsonrpc {name}", coro())


async def main() -> int:
    global LABEL, PUSH_SHAPE
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base_url")
    parser.add_argument("--label", default=LABEL)
    parser.add_argument("--push-shape", choices=["0.3", "1.0"], default=PUSH_SHAPE)
    args = parser.parse_args()
    LABEL = args.label
    PUSH_SHAPE = args.push_shape
    base = args.base_url.rstrip("/")
    await hooks.start()
    async with httpx.AsyncClient(timeout=TIMEOUT) as http:
        card = None
        try:
            card = await A2ACardResolver(http, base).get_agent_card()
            report(True, "card (v0.3 AgentCard model reads the combined card)")
        except Exception as e:  # noqa: BLE001
            report(False, "card", f"{type(e).__name__}: {e}")
        if card is not None:
            offered = {card.preferred_transport} | {
                i.transport for i in card.additional_interfaces or []
            }
            for transport in ("JSONRPC", "HTTP+JSON", "GRPC"):
                if transport not in offered:
                    report(False, f"{transport} offered", f"card offers {sorted(offered)}")
                    continue
                await binding_checks(base, card, transport, http)
        await jsonrpc_raw_checks(base, http)
    if os.environ.get("INTEROP_SUBTOTAL"):
        print(f"{LABEL} subtotal passed={passed} failed={failed}")
    else:
        print(f"interop: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
