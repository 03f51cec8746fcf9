#!/usr/bin/env python3
"""Converts a PyTorch memory snapshot into a streamsafe allocation trace.

Make the snapshot in the program to study:
    torch.cuda.memory._record_memory_history(max_entries=1_000_000)
    ... run ...
    torch.cuda.memory._dump_snapshot("snapshot.pickle")   # or pickle.dump(torch.cuda.memory._snapshot(), f)

then:  scripts/snapshot_to_csv.py snapshot.pickle trace.csv.gz   (gzip'd when the name ends in .gz)
and:   streamsafe replay trace.csv.gz

The output is CSV `action,addr,size,stream` (GUIDE.md section 5), one row per entry of the
snapshot's device_traces, in order, for every device (or only --device N). Unpickling needs no
torch: the snapshot is plain dicts and lists.
"""
import argparse
import gzip
import pickle
import sys

ACTIONS = {"alloc", "free_requested", "free_completed", "segment_alloc", "segment_free",
           "segment_map", "segment_unmap", "oom", "snapshot"}


def rows(snapshot, device):
    traces = snapshot.get("device_traces", [])
    for index, trace in enumerate(traces):
        if device is not None and index != device:
            continue
        for entry in trace:
            action = entry.get("action")
            if action not in ACTIONS:
                continue
            yield action, int(entry.get("addr", 0)), int(entry.get("size", 0)), int(entry.get("stream", 0))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("snapshot", help="pickle from torch.cuda.memory._snapshot() / _dump_snapshot()")
    parser.add_argument("output", help="CSV file; gzip'd when it ends in .gz; '-' for stdout")
    parser.add_argument("--device", type=int, default=None, help="only this device's trace")
    options = parser.parse_args()
    with open(options.snapshot, "rb") as f:
        snapshot = pickle.load(f)
    if options.output == "-":
        out = sys.stdout
    elif options.output.endswith(".gz"):
        out = gzip.open(options.output, "wt", newline="")
    else:
        out = open(options.output, "w", newline="")
    out.write("action,addr,size,stream\n")
    count = 0
    for action, addr, size, stream in rows(snapshot, options.device):
        out.write(f"{action},{addr},{size},{stream}\n")
        count += 1
    if out is not sys.stdout:
        out.close()
    if count == 0:
        print("snapshot_to_csv: no device_traces entries (was _record_memory_history enabled?)", file=sys.stderr)
        return 1
    print(f"snapshot_to_csv: wrote {count} events", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
