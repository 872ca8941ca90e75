#!/usr/bin/env python3
"""A tiny Trident --exec agent (Python 3, standard library only).

Reads the request line from stdin and answers with event lines on stdout:

- anything:   working, the text streamed back as 3 chunks of artifact "echo", completed
- "ask":      input-required ("What is your name?"); the follow-up message completes the task
              with a greeting
- "reply ...": a direct message, no task
- "crash":    working, a note on stderr, exit status 3 without a final state
- "sleep":    working (its status text says the pid), then sleeps 60 s: cancel it
"""

import json
import os
import sys
import time


def emit(event):
    # One JSON object per line, flushed at once so the client sees it stream.
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def main():
    request = json.loads(sys.stdin.readline())
    text = request["text"]
    task = request.get("task")

    if task is not None and task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED":
        emit({"type": "completed", "text": "Hello, %s!" % text})
        return 0

    if text == "reply" or text.startswith("reply "):
        emit({"type": "reply", "text": text})
        return 0

    emit({"type": "working", "text": "pid %d" % os.getpid()})

    if text == "ask":
        emit({"type": "input-required", "text": "What is your name?"})
        return 0
    if text == "crash":
        sys.stderr.write("echo.py: crashing as asked\n")
        sys.stderr.flush()
        return 3
    if text == "sleep":
        time.sleep(60)
        emit({"type": "completed", "text": "woke up"})
        return 0

    # Three chunks: the first creates the artifact, the others append, the last closes it.
    third = max(1, -(-len(text) // 3))
    chunks = [text[i * third:(i + 1) * third] for i in range(3)]
    for i, chunk in enumerate(chunks):
        time.sleep(0.05)
        emit({
            "type": "artifact",
            "id": "echo",
            "name": "echo",
            "text": chunk,
            "append": i > 0,
            "last": i == 2,
        })
    emit({"type": "completed"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
