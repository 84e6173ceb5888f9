"""The Jepsen-style table of a fault run, from the verdicts `make test-faults` appended to
a JSON-lines file: `python -m tests.faults.table tests/faults/results/latest.jsonl`."""

from __future__ import annotations

import json
import sys


def _s(x: float | None) -> str:
    return "never" if x is None else f"{x:.1f} s"


def table(records: list[dict]) -> str:
    lines = ["| fault | what was injected | commands (acked) | lost | duplicated | out of order | cap exceeded"
             " | other findings | longest without an answer | serving again / all applied after heal |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in records:
        other = {k: v for k, v in r["findings"].items()
                 if k not in ("acked but lost", "saved without its row", "events missing", "applied twice",
                              "events duplicated", "out of order", "invalidation after save", "above cap")}
        lines.append(f"| {r['schedule']} | {r['injected']} | {r['commands']} ({r['acked']}) | {r['lost']}"
                     f" | {r['duplicated']} | {r['out_of_order']} | {r['above_cap']}"
                     f" | {', '.join(f'{k}: {v}' for k, v in other.items()) or 'none'}"
                     f" | {_s(r.get('longest_gap_s'))} | {_s(r['recovery_s'])} / {_s(r['caught_up_s'])} |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m tests.faults.table RESULTS.jsonl", file=sys.stderr)
        return 2
    with open(argv[0]) as f:
        print(table([json.loads(line) for line in f if line.strip()]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
