#!/usr/bin/env python3
"""Writes the seed corpora in fuzz/corpus/<target>/ (checked in; rerun after changing this).

The requests are the ones of the golden wire tests (tests/it/wire/{jsonrpc,rest}.rs): the same
methods, routes, params and SSE frames, plus the malformed envelopes those tests assert on.
Seeds of proto_requests are not written here: run.sh --seeds derives them from the ProtoJSON
seeds (the protojson_requests target writes the protobuf encoding of each seed it decodes).
"""
import hashlib
import json
import os
import shutil

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def user(mid, text, **extra):
    m = {"messageId": mid, "role": "ROLE_USER", "parts": [{"text": text}]}
    m.update(extra)
    return m


META = {"trace": "abc", "n": 1, "f": 1.5, "ok": True, "nil": None, "list": [1, "two", {"x": []}]}
PARTS = [
    {"text": "hello", "mediaType": "text/plain"},
    {"raw": "aGVsbG8=", "filename": "a.bin", "mediaType": "application/octet-stream"},
    {"url": "https://example.com/a.png", "mediaType": "image/png"},
    {"data": {"k": [1, 2.5, "s", None, True]}, "metadata": {"m": 1}},
]
CONFIG = {"id": "cfg-1", "taskId": "t-1", "url": "https://client.example.com/hook",
          "token": "opaque-123", "authentication": {"scheme": "Bearer", "credentials": "hook-secret"}}

# (selector index, params) per request type, in trident_fuzz::REQUEST_TYPES order.
REQUESTS = [
    (0, {"message": user("m-1", "hello")}),
    (0, {"message": user("m-3", "again"), "configuration": {"returnImmediately": False, "historyLength": 0}}),
    (0, {"message": user("m-4", "ctx", contextId="c-1", taskId="t-1", extensions=["https://ext"],
                         referenceTaskIds=["t-0"], metadata=META),
         "configuration": {"acceptedOutputModes": ["text/plain"], "historyLength": 3,
                           "taskPushNotificationConfig": CONFIG},
         "metadata": META, "tenant": "acme"}),
    (0, {"message": {"messageId": "m-5", "role": "ROLE_AGENT", "parts": PARTS}}),
    (0, {"message": {"message_id": "m-6", "role": "ROLE_USER", "parts": [{"text": ""}]}}),
    (1, {"id": "t-1"}),
    (1, {"id": "t-1", "historyLength": 0, "tenant": "acme"}),
    (2, {"pageSize": 1, "status": "TASK_STATE_COMPLETED"}),
    (2, {"pageSize": 1, "status": "TASK_STATE_COMPLETED", "pageToken": "p-2", "includeArtifacts": True,
         "historyLength": 0}),
    (2, {"contextId": "c-1", "statusTimestampAfter": "2025-01-02T03:04:05.678Z", "status": "TASK_STATE_WORKING"}),
    (2, {"context_id": "c-1", "page_size": "20", "status_timestamp_after": "1970-01-01T00:00:00Z"}),
    (3, {"id": "t-1"}),
    (3, {"id": "t-1", "metadata": META, "tenant": "acme"}),
    (4, {"id": "t-1"}),
    (5, CONFIG),
    (5, {"taskId": "t-2", "url": "https://client.example.com/other"}),
    (6, {"taskId": "t-1", "id": "cfg-1"}),
    (7, {"taskId": "t-1"}),
    (7, {"taskId": "t-1", "pageSize": 10, "pageToken": "x"}),
    (8, {}),
    (8, {"tenant": "acme"}),
    (9, {"taskId": "t-1", "id": "cfg-1"}),
]

METHODS = ["SendMessage", "GetTask", "ListTasks", "CancelTask", "SubscribeToTask",
           "CreateTaskPushNotificationConfig", "GetTaskPushNotificationConfig",
           "ListTaskPushNotificationConfigs", "GetExtendedAgentCard", "DeleteTaskPushNotificationConfig"]


def dump(v):
    return json.dumps(v, separators=(",", ":")).encode()


def write(target, seeds):
    d = os.path.join(ROOT, target)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    for s in seeds:
        name = hashlib.sha1(s).hexdigest()
        with open(os.path.join(d, name), "wb") as f:
            f.write(s)
    print(f"{target}: {len(set(seeds))} seeds")


def jsonrpc():
    out = []
    for i, (sel, params) in enumerate(REQUESTS):
        out.append(dump({"jsonrpc": "2.0", "id": i, "method": METHODS[sel], "params": params}))
    out.append(dump({"jsonrpc": "2.0", "id": "s", "method": "SendStreamingMessage",
                     "params": {"message": user("m-7", "stream")}}))
    out += [
        b'{"jsonrpc":"2.0","id":"req-2","method":"SendMessage","params":{"message":{"messageId":"m-2","role":"ROLE_USER","parts":[{"text":"hi"}]}}}',
        b'{"jsonrpc":"2.0","id":-1.5e3,"method":"GetTask","params":{"id":"t"}}',
        b'{"jsonrpc":"2.0","id":null,"method":"GetExtendedAgentCard"}',
        b'{"jsonrpc":"2.0","method":"GetTask","params":{"id":"t"}}',
        b'{"jsonrpc":"2.0","id":true,"method":"GetTask"}',
        b'{"jsonrpc":"1.0","id":1,"method":"GetTask"}',
        b'{"jsonrpc":"2.0","id":1,"method":"tasks/get"}',
        b'{"jsonrpc":"2.0","id":1,"method":5}',
        b'{"jsonrpc":"2.0","id":1,"method":"GetTask","params":[1,2]}',
        b'{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":7}}',
        b'{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"status":"NOPE"}}',
        b'[{"jsonrpc":"2.0","id":1,"method":"GetTask"}]',
        b'  {"jsonrpc":"2.0","id":"\\u00e9\\ud83d\\ude00","method":"Get\\u0054ask","params":null}  ',
        b'{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t"',
        b'{}', b'null', b'',
    ]
    return out


def rest():
    J = "application/json"
    out = []

    def req(method, target, body=None, ct=J):
        b = b"" if body is None else (body if isinstance(body, bytes) else dump(body))
        out.append(f"{method} {target}\n{ct if body is not None else ''}\n".encode() + b)

    for prefix in ["", "/acme", "/t%2Fx"]:
        req("POST", f"{prefix}/message:send", {"message": user("m-1", "hello")})
        req("POST", f"{prefix}/message:stream", {"message": user("m-2", "stream")})
        req("GET", f"{prefix}/tasks/t-1")
        req("GET", f"{prefix}/tasks/t-1?historyLength=0")
        req("GET", f"{prefix}/tasks?pageSize=1&status=TASK_STATE_COMPLETED")
        req("GET", f"{prefix}/tasks?pageSize=1&status=TASK_STATE_COMPLETED&pageToken=p-2&includeArtifacts=true&historyLength=0")
        req("GET", f"{prefix}/tasks?context_id=c-1&include_artifacts=1&history_length=1&statusTimestampAfter=2025-01-01T00:00:00Z")
        req("POST", f"{prefix}/tasks/t-1:cancel", {})
        req("POST", f"{prefix}/tasks/t-1:cancel", b"")
        req("GET", f"{prefix}/tasks/t-1:subscribe")
        req("POST", f"{prefix}/tasks/t-1:subscribe")
        req("POST", f"{prefix}/tasks/t-1/pushNotificationConfigs",
            {"id": "cfg-1", "url": "https://client.example.com/hook", "token": "opaque-123",
             "authentication": {"scheme": "Bearer", "credentials": "hook-secret"}})
        req("GET", f"{prefix}/tasks/t-1/pushNotificationConfigs/cfg-1")
        req("GET", f"{prefix}/tasks/t-1/pushNotificationConfigs?pageSize=2&pageToken=x")
        req("DELETE", f"{prefix}/tasks/t-1/pushNotificationConfigs/cfg-1")
        req("GET", f"{prefix}/extendedAgentCard")
    req("GET", "/tasks/a%3Acancel")
    req("GET", "/tasks/%E2%9C%93?tenant=acme&a2a-version=1.0")
    req("GET", "/tasks?includeArtifacts=maybe")
    req("GET", "/tasks?pageSize=abc&historyLength=-1&status=7")
    req("GET", "/tasks?+=+&&=&%ZZ=%FF")
    req("PUT", "/tasks/t-1")
    req("DELETE", "/message:send")
    req("POST", "/message:send", {"message": user("m", "x")}, ct="text/plain")
    req("POST", "/message:send", {"message": user("m", "x")}, ct="application/a2a+json; charset=utf-8")
    req("POST", "/message:send", b"{\"message\":")
    req("POST", "/tasks//pushNotificationConfigs", {})
    req("GET", "/nope")
    req("GET", "http://host:8080/tasks/t-1?x=y")
    return out


def protojson():
    out = [bytes([sel]) + dump(params) for sel, params in REQUESTS]
    out += [bytes([sel]) + b"{}" for sel in range(10)]
    out += [bytes([2]) + b'{"statusTimestampAfter":"9999-12-31T23:59:59.999999999Z"}',
            bytes([2]) + b'{"statusTimestampAfter":"0001-01-01T00:00:00+01:00"}',
            bytes([2]) + b'{"pageSize":2147483647,"historyLength":-2147483648}',
            bytes([3]) + b'{"id":"t","metadata":{"big":1e308,"neg":-0.0,"int":9007199254740993}}',
            bytes([0]) + b'{"message":{"messageId":"m","parts":[{"raw":"////"},{"data":null}]}}',
            # The crash the target found: a number serde_json's default parser rounded wrongly.
            bytes([3]) + b'{"id":"t","metadata":{"big":1e308,"n:-eg":-1.09007199296666666666,"t":80143859094812986}}',
            # The second one: an offset that moves a Timestamp out of its range.
            bytes([2]) + b'{"statusTimestampAfter":"0000-01-01T00:00:00+01:00"}']
    return out


def sse():
    def frame(data, id=None, event=None):
        s = ""
        if event:
            s += f"event: {event}\n"
        if id is not None:
            s += f"id: {id}\n"
        return s + "".join(f"data: {line}\n" for line in data.split("\n")) + "\n"

    task = {"task": {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_SUBMITTED"}}}
    status = {"statusUpdate": {"taskId": "t", "contextId": "c",
                               "status": {"state": "TASK_STATE_WORKING", "timestamp": "2025-01-01T00:00:00Z"}}}
    chunk = {"artifactUpdate": {"taskId": "t", "contextId": "c", "append": True, "lastChunk": True,
                                "artifact": {"artifactId": "a", "parts": [{"text": "chunk 1"}]}}}
    msg = {"message": {"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "hi"}]}}
    err = {"error": {"code": 404, "status": "NOT_FOUND", "message": "task not found",
                     "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                                  "reason": "TASK_NOT_FOUND", "domain": "a2a-protocol.org"}]}}

    def rpc(result, id=7):
        return json.dumps({"jsonrpc": "2.0", "id": id, "result": result})

    bodies = [
        frame(json.dumps(task), 1) + frame(json.dumps(status), 2) + frame(json.dumps(chunk), 3),
        frame(json.dumps(msg)),
        frame(json.dumps(err), event="error"),
        frame(json.dumps(task, indent=1), 5),
        frame(rpc(task), 1) + frame(rpc(status), 2) + frame(rpc(chunk), 3),
        frame(rpc(msg, "s-reply")),
        frame(json.dumps({"jsonrpc": "2.0", "id": 7, "error": {"code": -32001, "message": "Task not found",
                                                             "data": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "TASK_NOT_FOUND"}]}})),
        ": keep-alive\n\n" + frame(json.dumps(status), 9),
        "retry: 1000\r\nid: 4\r\ndata: " + json.dumps(status) + "\r\n\r\n",
        "data:" + json.dumps(msg) + "\r" + "\r",
        "\ufeffdata: " + json.dumps(msg) + "\n\n",
        "event: message\ndata\nid\nretry: x\nfield without colon\n\n",
        "data: {\"task\":",
    ]
    out = []
    for b in bodies:
        raw = b.encode()
        out.append(b"\x00" + raw)
        # The same body cut in three chunks.
        out.append(b"\x02\x40\xa0" + raw)
    return out


if __name__ == "__main__":
    write("jsonrpc_envelope", jsonrpc())
    write("rest_request", rest())
    write("protojson_requests", protojson())
    write("sse_parser", sse())
