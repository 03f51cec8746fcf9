#!/usr/bin/env python3
"""Repeats one iteration of an allocation trace N times, as a training loop would run it.

Keeps the allocations that the trace both makes and frees (those live across the recording's
boundaries would otherwise pile up, one more per copy), drops PyTorch's segment events, and gives
every copy fresh addresses. Replaying the result shows an allocator's steady state: how much of
its slow path is first-iteration warm-up and how much recurs every iteration.

    scripts/repeat_trace.py IN.csv.gz OUT.csv.gz [--iterations 4]
"""
import argparse
import gzip


def read_rows(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        header = next(f).strip()
        return header, [line.strip().split(",") for line in f if line.strip()]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("input")
    parser.add_argument("output")
    parser.add_argument("--iterations", type=int, default=4)
    options = parser.parse_args()
    header, rows = read_rows(options.input)
    rows = [r for r in rows if not r[0].startswith("segment")]

    # An address is reused within a trace: pair each free with the allocation live at that address.
    live, freed = {}, set()
    for index, (action, addr, _size, _stream) in enumerate(rows):
        if action == "alloc":
            live[addr] = index
        elif action == "free_requested" and addr in live:
            freed.add(live.pop(addr))

    out = [header]
    stride = 1 << 40  # far apart: no copy's addresses meet another's
    for iteration in range(options.iterations):
        current = {}
        for index, (action, addr, size, stream) in enumerate(rows):
            if action == "alloc":
                current.pop(addr, None)
                if index in freed:
                    current[addr] = index
                    out.append(f"alloc,{iteration * stride + index * 4096},{size},{stream}")
            elif addr in current:
                out.append(f"{action},{iteration * stride + current[addr] * 4096},{size},{stream}")
                if action == "free_completed":
                    del current[addr]
    opener = gzip.open if options.output.endswith(".gz") else open
    with opener(options.output, "wt") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
