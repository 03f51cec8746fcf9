#!/usr/bin/env python3
"""Medians [ranges] of the `conflicts` and `activate` timers per trace and binary in a
switch_timers.sh output: python3 switch_timers_count_summary.py switch_timers_count.txt"""
import collections
import re
import statistics
import sys

runs = collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(sys.argv[1]):
    m = re.match(r"round \d+ (\S+) (\S+) (.*)", line)
    if not m:
        continue
    trace, binary, rest = m.groups()
    for name, ms in re.findall(r"(conflicts|activate) ([0-9.]+) ms", rest):
        runs[(trace, binary)][name].append(float(ms))
for (trace, binary), timers in sorted(runs.items()):
    print(f"{trace:14} {binary:14} " + "  ".join(
        f"{n} {statistics.median(v):6.2f} [{min(v):.2f}-{max(v):.2f}]" for n, v in sorted(timers.items()))
        + f"  runs {len(timers['conflicts'])}")
