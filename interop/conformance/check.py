"""Compares a `trident conformance --json` report with the committed expected outcomes.

Usage: python3 check.py EXPECTED.md SERVER REPORT.json

EXPECTED.md holds a Markdown table `| server | case | bindings | outcome | why |`: every cell
(case x binding) of SERVER that does not pass is listed there, with why; `bindings` is `*` or
a comma-separated list, `outcome` is `fail`, `skip` or alternatives such as `fail|pass` for a
case whose result depends on timing in the peer. Cells not listed must pass. Prints every
difference and exits 1 when there is one; prints one summary line either way.
"""

import json
import re
import sys


def expected_cells(path, server, bindings):
    cells = {}
    with open(path, encoding='utf-8') as f:
        for line in f:
            # Columns split on `|` but not on `\|` (an escaped alternative in a cell).
            row = line.strip().removeprefix('|').removesuffix('|')
            cols = [c.strip().replace('\\|', '|') for c in re.split(r'(?<!\\)\|', row)]
            if not line.startswith('|') or len(cols) < 5 or cols[0] != server:
                continue
            case, which, outcome = cols[1].strip('`'), cols[2], cols[3]
            for b in bindings if which == '*' else [b.strip() for b in which.split(',')]:
                cells[(case, b)] = set(outcome.split('|'))
    return cells


def main():
    expected_path, server, report_path = sys.argv[1:4]
    with open(report_path, encoding='utf-8') as f:
        report = json.load(f)
    bindings = report['bindings']
    expected = expected_cells(expected_path, server, bindings)
    differences = []
    seen = set()
    for case in report['cases']:
        for binding, result in case['results'].items():
            key = (case['case'], binding)
            seen.add(key)
            want = expected.get(key, {'pass'})
            if result['outcome'] not in want:
                reason = (result['reason'] or '').replace('\n', ' ')[:200]
                differences.append(
                    f"{case['case']} [{binding}]: expected {'|'.join(sorted(want))}, "
                    f"observed {result['outcome']}: {reason}"
                )
    for key in sorted(set(expected) - seen):
        differences.append(f'{key[0]} [{key[1]}]: listed as expected but not in the report')
    for d in differences:
        print(f'  {server}: {d}')
    print(
        f"{server}: {report['passed']} passed, {report['failed']} failed, "
        f"{report['skipped']} skipped; {len(differences)} differences from the expected table"
    )
    return 1 if differences else 0


if __name__ == '__main__':
    sys.exit(main())
