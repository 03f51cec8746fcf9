#!/usr/bin/env python3
"""The two-stream step of bench/hazard/two_stream_step_bench.cpp, written in PyTorch, timed
with and without PyTorch's CUDA sanitizer (CSAN) in the same process family.

One step: stream A waits on B's last event, fills x (65,536 int32) with 3; records a_done;
stream B waits on a_done, writes y = 2 * x; records b_done; the host synchronizes b_done.

    bench/torch/csan_two_stream_step.py [--csan | --streamsafe] [--steps N] [--warmup N]

prints one JSON line: {"csan": bool, "streamsafe": bool, "steps": N, "us_per_step": median over
blocks, "blocks": [...]}. --streamsafe times the step under streamsafe.torch.sanitize() (the
package on PYTHONPATH); TORCH_CUDA_SANITIZER=1 in the environment enables CSAN as --csan does.
CSAN must be enabled before the first CUDA call, so each mode runs in its own process; run the
two alternately, several times, to see the host's spread (bench/torch/run_csan_compare.sh).
"""
import argparse
import json
import os
import statistics
import time


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--csan", action="store_true", help="enable torch.cuda._sanitizer first")
    parser.add_argument("--streamsafe", action="store_true", help="time under streamsafe.torch.sanitize()")
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--blocks", type=int, default=10)
    options = parser.parse_args()

    import contextlib
    import torch
    tracked = contextlib.nullcontext()
    if options.streamsafe:
        import streamsafe.torch
        tracked = streamsafe.torch.sanitize()
    if options.csan:
        import torch.cuda._sanitizer as csan
        csan.enable_cuda_sanitizer()

    a = torch.cuda.Stream()
    b = torch.cuda.Stream()
    a_done = torch.cuda.Event()
    b_done = torch.cuda.Event()
    x = torch.empty(1 << 16, dtype=torch.int32, device="cuda")
    y = torch.empty(1 << 16, dtype=torch.int32, device="cuda")
    # x and y were made on the current stream: A and B start after it (CSAN rightly reports a
    # fresh allocation used on another stream without this).
    a.wait_stream(torch.cuda.current_stream())
    b.wait_stream(torch.cuda.current_stream())
    b_done.record(b)

    def step():
        with torch.cuda.stream(a):
            a.wait_event(b_done)
            x.fill_(3)
            a_done.record(a)
        with torch.cuda.stream(b):
            b.wait_event(a_done)
            torch.mul(x, 2, out=y)
            b_done.record(b)
        b_done.synchronize()

    per_block = max(1, options.steps // options.blocks)
    blocks = []
    with tracked as session:
        for _ in range(options.warmup):
            step()
        for _ in range(options.blocks):
            start = time.perf_counter_ns()
            for _ in range(per_block):
                step()
            blocks.append((time.perf_counter_ns() - start) / per_block / 1000.0)
        assert int(y[0].item()) == 6
    hazards = len(session.hazards) if options.streamsafe else None
    print(json.dumps({"csan": options.csan or os.environ.get("TORCH_CUDA_SANITIZER") == "1",
                      "streamsafe": options.streamsafe, "hazards": hazards, "steps": per_block * options.blocks,
                      "us_per_step": statistics.median(blocks), "blocks": blocks,
                      "torch": torch.__version__}))


if __name__ == "__main__":
    main()
