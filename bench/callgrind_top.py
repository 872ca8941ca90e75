#!/usr/bin/env python3
"""Top functions of a callgrind dump, exclusive (self) and inclusive, per request.

Usage: callgrind_top.py DUMP REQUESTS [K]
       callgrind_top.py --allocations DUMP REQUESTS   (prints heap allocations per request)
       callgrind_top.py --callers FUNCTION DUMP REQUESTS [K]
                        (who calls FUNCTION, e.g. a memcpy: Ir of those calls and their
                         number, per request, by caller)

Reads the callgrind format directly (name compression, `calls=` lines), so it works on the
dumps `callgrind_control --dump` writes. Inclusive cost = self + the cost of calls made
(recursion counted once per call site, as callgrind records it). Heap allocations per request
are the calls made to the C allocator's entry points (`malloc`, `calloc`, `realloc`,
`aligned_alloc`, `posix_memalign`, `memalign`): every Rust allocation goes through one of them.
"""
import re
import sys
from collections import defaultdict


ALLOCATORS = {"malloc", "calloc", "realloc", "aligned_alloc", "posix_memalign", "memalign"}


def parse(path, callers_of=None):
    self_cost = defaultdict(int)
    by_caller = defaultdict(lambda: [0, 0])
    incl_calls = defaultdict(int)
    fn = None
    callee = None
    allocations = 0
    after_calls = False
    total = 0
    comp = {}

    def name(kind, value):
        m = re.match(r"\((\d+)\)(?: (.*))?", value)
        if not m:
            return value
        key, label = m.group(1), m.group(2)
        if label is not None:
            comp[key] = label
        return comp.get(key, value)

    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            c = line[0]
            if c.isdigit() or c in "+-*":
                parts = line.split()
                if len(parts) < 2:
                    continue
                cost = int(parts[1])
                if after_calls:
                    incl_calls[fn] += cost
                    if callers_of is not None and callee is not None and callers_of in callee:
                        by_caller[fn][0] += cost
                    after_calls = False
                else:
                    self_cost[fn] += cost
                    total += cost
                continue
            if line.startswith("fn="):
                fn = name("fn", line[3:])
            elif line.startswith("cfn=") or line.startswith("cfi=") or line.startswith("cob="):
                if line.startswith("cfn="):
                    callee = name("fn", line[4:])
            elif line.startswith("calls="):
                after_calls = True
                if callers_of is not None and callee is not None and callers_of in callee:
                    by_caller[fn][1] += int(line[6:].split()[0])
                if callee in ALLOCATORS and fn not in ALLOCATORS:
                    allocations += int(line[6:].split()[0])
    if callers_of is not None:
        return by_caller
    return self_cost, incl_calls, total, allocations


def main():
    if sys.argv[1] == "--callers":
        target, path, requests = sys.argv[2], sys.argv[3], int(sys.argv[4])
        k = int(sys.argv[5]) if len(sys.argv) > 5 else 25
        rows = sorted(parse(path, target).items(), key=lambda x: -x[1][0])[:k]
        print(f"calls to {target}, by caller (Ir/request, calls/request):")
        for fn, (cost, calls) in rows:
            short = fn if len(fn) <= 130 else fn[:127] + "..."
            print(f"{cost / requests:>10,.0f} {calls / requests:6.1f}  {short}")
        return
    if sys.argv[1] == "--allocations":
        path, requests = sys.argv[2], int(sys.argv[3])
        print(f"{parse(path)[3] / requests:.1f}")
        return
    path, requests = sys.argv[1], int(sys.argv[2])
    k = int(sys.argv[3]) if len(sys.argv) > 3 else 25
    self_cost, incl_calls, total, allocations = parse(path)
    print(f"total: {total / requests:,.0f} Ir/request, {allocations / requests:.1f} heap allocations/request")
    short = lambda n: (n if len(n) <= 110 else n[:107] + "...")
    print(f"\ntop {k} exclusive (Ir/request, share):")
    for fn, c in sorted(self_cost.items(), key=lambda x: -x[1])[:k]:
        print(f"{c / requests:>10,.0f} {100 * c / total:5.1f}%  {short(fn)}")
    incl = {fn: self_cost.get(fn, 0) + incl_calls.get(fn, 0) for fn in set(self_cost) | set(incl_calls)}
    print(f"\ntop {k} inclusive (Ir/request, share):")
    for fn, c in sorted(incl.items(), key=lambda x: -x[1])[:k]:
        print(f"{c / requests:>10,.0f} {100 * c / total:5.1f}%  {short(fn)}")


if __name__ == "__main__":
    main()
