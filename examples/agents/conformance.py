#!/usr/bin/env python3
"""The conformance script as a Trident --exec agent (Python 3, standard library only).

`trident serve --exec examples/agents/conformance.py` is an agent that follows the conformance
script (docs/conformance-script.md), so `trident conformance` runs its scripted cases too. The
behaviour is picked by the first word of the task's first user message:

  conformance-script  the handshake: a direct message "conformance-script 1"
  reply ...           a direct message echoing the text (no task)
  input               input-required "What is your name?"; the follow-up completes with the
                      artifact "greeting" = "Hello, <text>!"
  auth                auth-required; the follow-up completes (echo)
  slow                working until canceled (completes after 60 s otherwise)
  stream N [MS]       working, N chunks of artifact "stream" MS ms apart (default 3 and 2),
                      completed
  fail                working, then failed with "the demo agent was asked to fail"
  reject              rejected
  anything else       completed with one artifact "echo" holding the text

`refuse` (an error before any event) cannot be expressed by an --exec program: it is echoed,
and the case that checks it skips, as the script allows.
"""

import json
import sys
import time


def emit(event):
    # One JSON object per line, flushed at once so the client sees it stream.
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def text_of(message):
    return "\n".join(p["text"] for p in (message or {}).get("parts", []) if "text" in p)


def echo(text):
    emit({"type": "artifact", "id": "echo", "name": "echo", "text": text})
    emit({"type": "completed"})


def main():
    request = json.loads(sys.stdin.readline())
    text = request["text"]
    task = request.get("task")
    history = (task or {}).get("history") or []
    first = text_of(history[0]) if task is not None and history else text
    words = first.split()
    verb = words[0] if words else ""

    if task is None and verb == "conformance-script":
        emit({"type": "reply", "text": "conformance-script 1"})
    elif verb == "reply":
        emit({"type": "reply", "text": text})
    elif verb == "input" and task is None:
        emit({"type": "input-required", "text": "What is your name?"})
    elif verb == "input":
        emit({"type": "artifact", "id": "greeting", "name": "greeting",
              "text": "Hello, %s!" % text})
        emit({"type": "completed"})
    elif verb == "auth" and task is None:
        emit({"type": "auth-required", "text": "Sign in at the link I sent you"})
    elif verb == "slow":
        emit({"type": "working"})
        time.sleep(60)
        emit({"type": "completed"})
    elif verb == "stream":
        chunks = int(words[1]) if len(words) > 1 and words[1].isdigit() else 3
        pause = int(words[2]) if len(words) > 2 and words[2].isdigit() else 2
        emit({"type": "working"})
        for i in range(chunks):
            time.sleep(pause / 1000)
            emit({"type": "artifact", "id": "stream", "name": "stream",
                  "text": "chunk %d of %s" % (i, text),
                  "append": i > 0, "last": i + 1 == chunks})
        emit({"type": "completed"})
    elif verb == "fail":
        emit({"type": "working"})
        emit({"type": "failed", "text": "the demo agent was asked to fail"})
    elif verb == "reject":
        emit({"type": "rejected", "text": "I do not do that"})
    else:
        echo(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
