#!/usr/bin/env python3
"""Where a server's heap allocations per request are made, from two valgrind `dhat` runs.

Usage: dhat_top.py SHORT.json N_SHORT LONG.json N_LONG [K] [--full] [--place SUBSTRING]

SHORT and LONG are `valgrind --tool=dhat` outputs of the same server and the same load, the
first after N_SHORT requests, the second after N_LONG (both after the same warm-up). The
difference per allocation stack over N_LONG - N_SHORT is what one request allocates: start-up,
warm-up and shut-down cancel out. Each stack is attributed to its innermost frame in our own
code (a `trident` crate), or else in axum, tonic, hyper or tokio, and the K largest places are
printed with their allocations (and bytes) per request; --full prints each place's largest stack too, --place each stack of the places whose name
contains SUBSTRING.
(bench/profile.sh gives the total alone, from callgrind; this says where.)
"""
import json
import re
import sys
from collections import defaultdict

OURS = re.compile(r"\btrident_\w+|\btrident::")
FRAMEWORKS = re.compile(r"\b(axum|tonic|hyper|hyper_util|h2|tokio|tower|prost|pbjson|serde_json)::")


def load(path):
    with open(path) as f:
        data = json.load(f)
    frames = data["ftbl"]
    stacks = defaultdict(int)
    nbytes = defaultdict(int)
    for pp in data["pps"]:
        stacks[tuple(pp["fs"])] += pp["tbk"]
        nbytes[tuple(pp["fs"])] += pp["tb"]
    return frames, stacks, nbytes


def symbol(frame):
    # "0x4A5B: trident_engine::engine::run::Run::create_with (run.rs:488)"
    m = re.match(r"0x[0-9A-Fa-f]+: (.*?)(?: \((?:in )?[^()]*\))?$", frame)
    return m.group(1) if m else frame


def path_of(name):
    """A frame's path without generic arguments: `new<ArcInner<trident_x::T>>` is `new`, which
    says nothing of who called it; `trident_x::f::<T>::{{closure}}` keeps `trident_x::f`."""
    depth = 0
    out = []
    for ch in name:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(depth - 1, 0)
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def main(argv):
    full = "--full" in argv
    argv = [a for a in argv if a != "--full"]
    focus = None
    if "--place" in argv:
        i = argv.index("--place")
        focus = argv[i + 1]
        del argv[i : i + 2]
    if len(argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    short_path, n_short, long_path, n_long = argv[0], int(argv[1]), argv[2], int(argv[3])
    top = int(argv[4]) if len(argv) > 4 else 30
    span = n_long - n_short
    if span <= 0:
        print("N_LONG must exceed N_SHORT", file=sys.stderr)
        return 2
    # Frame tables differ between runs: compare stacks by their symbols.
    per_stack = defaultdict(float)
    per_stack_bytes = defaultdict(float)
    for path, sign in ((long_path, 1), (short_path, -1)):
        frames, stacks, nbytes = load(path)
        for stack, blocks in stacks.items():
            key = tuple(symbol(frames[i]) for i in stack)
            per_stack[key] += sign * blocks
            per_stack_bytes[key] += sign * nbytes[stack]
    places = defaultdict(float)
    place_bytes = defaultdict(float)
    example = {}
    for key, blocks in per_stack.items():
        if abs(blocks) < 1e-9:
            continue
        names = list(key)
        where = names[-1] if names else "?"
        for pattern in (OURS, FRAMEWORKS):
            hit = next((n for n in names if pattern.search(path_of(n))), None)
            if hit:
                where = hit
                break
        if focus and focus in where and abs(blocks) / span >= 0.5:
            print(f"{blocks / span:6.2f}  " + " <- ".join(n[:90] for n in names[5:16]))
        places[where] += blocks / span
        place_bytes[where] += per_stack_bytes[key] / span
        if blocks > 0 and (where not in example or blocks > example[where][0]):
            example[where] = (blocks, names)
    total = sum(places.values())
    total_bytes = sum(place_bytes.values())
    print(f"{total:.1f} allocations ({total_bytes:.0f} bytes) per request over {span} requests")
    for where, per in sorted(places.items(), key=lambda kv: -kv[1])[:top]:
        print(f"{per:7.2f} {place_bytes[where]:8.0f} B  {where[:200]}")
        if full and where in example:
            for name in example[where][1][:12]:
                print(f"           {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
