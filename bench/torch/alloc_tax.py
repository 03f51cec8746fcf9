"""The cost of an allocation through torch: torch.empty + del, PyTorch's own allocator against
streamsafe's through torch's pluggable-allocator route. Each allocator runs in its own process
(the allocator is chosen before CUDA starts); a run prints and writes one JSON object:

    STREAMSAFE_TORCH_ALLOC_LIB=... PYTHONPATH=python python3 bench/torch/alloc_tax.py --out $OUT/alloc_tax.json
"""

import argparse
import json
import statistics
import subprocess
import sys
import time

SIZES = [512, 64 << 10, 4 << 20]


def measure(allocator, iterations, repeats):
    import torch

    if allocator == "streamsafe":
        from streamsafe.torch._allocator import use_allocator

        use_allocator()
    torch.cuda.init()
    results = {}
    for size in SIZES:
        count = size // 4
        for _ in range(1000):  # warm the cache and the Python paths
            del_me = torch.empty(count, dtype=torch.float32, device="cuda")
            del del_me
        per_pair = []
        for _ in range(repeats):
            begin = time.perf_counter_ns()
            for _ in range(iterations):
                x = torch.empty(count, dtype=torch.float32, device="cuda")
                del x
            per_pair.append((time.perf_counter_ns() - begin) / iterations)
        results[str(size)] = {"median_ns": statistics.median(per_pair), "min_ns": min(per_pair),
                              "max_ns": max(per_pair)}
    torch.cuda.synchronize()
    return {"allocator": allocator, "torch": torch.__version__, "device": torch.cuda.get_device_name(),
            "iterations": iterations, "repeats": repeats, "ns_per_empty_and_del": results}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--allocator", choices=["native", "streamsafe"], help="measure one, in this process")
    parser.add_argument("--iterations", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--out")
    args = parser.parse_args()
    if args.allocator:
        print(json.dumps(measure(args.allocator, args.iterations, args.repeats)))
        return
    runs = []
    for allocator in ("native", "streamsafe"):
        run = subprocess.run([sys.executable, __file__, "--allocator", allocator, "--iterations", str(args.iterations),
                              "--repeats", str(args.repeats)], capture_output=True, text=True, check=True)
        runs.append(json.loads(run.stdout.strip().splitlines()[-1]))
    native, ours = (r["ns_per_empty_and_del"] for r in runs)
    report = {"runs": runs, "tax_ns": {size: ours[size]["median_ns"] - native[size]["median_ns"] for size in native}}
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w") as out:
            out.write(text + "\n")


if __name__ == "__main__":
    main()
