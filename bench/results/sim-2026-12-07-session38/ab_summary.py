"""Medians of ab_switch.sh's lines: iteration 2's allocator ns/op and the mean of 2-10, per trace and binary."""
import collections
import statistics
import sys

runs = collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) < 13 or f[0] != 'round':
        continue
    runs[f[2]][f[3]].append((float(f[6]), float(f[10])))
for trace, binaries in runs.items():
    for binary, rows in binaries.items():
        it2 = [r[0] for r in rows]
        mean = [r[1] for r in rows]
        print(f"{trace:14s} {binary:10s} iteration 2 median {statistics.median(it2):5.0f} [{min(it2):.0f}-{max(it2):.0f}]"
              f"  mean 2-10 median {statistics.median(mean):6.1f} [{min(mean):.1f}-{max(mean):.1f}]  rounds {len(rows)}")
