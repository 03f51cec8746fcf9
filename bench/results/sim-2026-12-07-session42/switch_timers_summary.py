"""Medians (and ranges) of switch_timers.sh's lines, per trace and binary: each timer's sum per run."""
import collections
import re
import statistics
import sys

runs = collections.defaultdict(lambda: collections.defaultdict(lambda: collections.defaultdict(list)))
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) < 4 or f[0] != 'round':
        continue
    sums = collections.defaultdict(float)
    for name, ms in re.findall(r'(\w+) ([0-9.]+) ms', line):
        sums[name] += float(ms)
    for name, total in sums.items():
        runs[f[2]][f[3]][name].append(total)
names = ['blocks_of', 'planner_ctor', 'plan', 'start_plan', 'activate']
for trace, binaries in runs.items():
    for binary, timers in binaries.items():
        cells = [f"{n} {statistics.median(timers[n]):5.1f} [{min(timers[n]):.1f}-{max(timers[n]):.1f}]"
                 for n in names if timers[n]]
        print(f"{trace:14s} {binary:16s} " + "  ".join(cells) + f"  runs {len(timers['activate'])}")
