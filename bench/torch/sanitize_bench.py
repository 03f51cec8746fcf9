#!/usr/bin/env python3
"""The sanitizer's cost on the H200 (one run, all variants alternated so they see one host):

(a) the two-stream step of bench/torch/csan_two_stream_step.py, untracked, under CSAN
    (TORCH_CUDA_SANITIZER=1) and under streamsafe.torch.sanitize(), each in its own process
    (CSAN must start before CUDA does), ROUNDS rounds;
(b) a real model's training step (torchvision resnet18, random weights, batch 64 at 224x224,
    SGD with momentum, on one side stream fed by a data stream), untracked and under
    streamsafe.torch.sanitize(), alternated in this process.

    PYTHONPATH=<build>/python bench/torch/sanitize_bench.py [--out DIR] [--rounds N]

writes DIR/sanitize_bench.json (every sample) and prints the medians and ratios."""

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def two_stream_step(mode, steps):
    command = [sys.executable, os.path.join(HERE, "csan_two_stream_step.py"), "--steps", str(steps)]
    env = dict(os.environ)
    env.pop("TORCH_CUDA_SANITIZER", None)
    if mode == "csan":
        env["TORCH_CUDA_SANITIZER"] = "1"
    elif mode == "streamsafe":
        command.append("--streamsafe")
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def resnet_step_timer():
    import torch
    import torch.nn.functional as F
    import torchvision
    data, compute = torch.cuda.Stream(), torch.cuda.Stream()
    model = torchvision.models.resnet18(weights=None).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    labels = torch.randint(0, 1000, (64,), device="cuda")
    staging = torch.randn(64, 3, 224, 224).pin_memory()
    uploaded = torch.cuda.Event()
    compute.wait_stream(torch.cuda.current_stream())
    data.wait_stream(torch.cuda.current_stream())

    def step():
        with torch.cuda.stream(data):
            batch = staging.to("cuda", non_blocking=True)
            uploaded.record(data)
        with torch.cuda.stream(compute):
            compute.wait_event(uploaded)
            batch.record_stream(compute)
            loss = F.cross_entropy(model(batch), labels)
            opt.zero_grad()
            loss.backward()
            opt.step()
        compute.synchronize()
        uploaded.synchronize()

    def timed(steps, tracked):
        import streamsafe.torch
        context = streamsafe.torch.sanitize() if tracked else contextlib.nullcontext()
        with context as session:
            step()
            start = time.perf_counter_ns()
            for _ in range(steps):
                step()
            elapsed = (time.perf_counter_ns() - start) / steps / 1000.0
        return elapsed, (len(session.hazards) if tracked else None)
    return timed


def ratio(a, b):
    return round(statistics.median(a) / statistics.median(b), 3)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--two-stream-steps", type=int, default=2000)
    parser.add_argument("--model-steps", type=int, default=20)
    options = parser.parse_args()

    samples = {"two_stream": {"untracked": [], "csan": [], "streamsafe": []},
               "resnet18": {"untracked": [], "streamsafe": []}}
    hazards = {"two_stream": [], "resnet18": []}
    timed = resnet_step_timer()
    for _ in range(options.rounds):
        for mode in ("untracked", "csan", "streamsafe"):
            line = two_stream_step(mode, options.two_stream_steps)
            samples["two_stream"][mode].append(line["us_per_step"])
            if mode == "streamsafe":
                hazards["two_stream"].append(line["hazards"])
        for tracked in (False, True):
            us, found = timed(options.model_steps, tracked)
            samples["resnet18"]["streamsafe" if tracked else "untracked"].append(us)
            if tracked:
                hazards["resnet18"].append(found)

    two, model = samples["two_stream"], samples["resnet18"]
    summary = {
        "two_stream_us": {mode: statistics.median(v) for mode, v in two.items()},
        "two_stream_csan_cost": ratio(two["csan"], two["untracked"]),
        "two_stream_streamsafe_cost": ratio(two["streamsafe"], two["untracked"]),
        "resnet18_step_us": {mode: statistics.median(v) for mode, v in model.items()},
        "resnet18_streamsafe_cost": ratio(model["streamsafe"], model["untracked"]),
        "hazards": hazards,
    }
    import torch
    summary["torch"] = torch.__version__
    summary["device"] = torch.cuda.get_device_name()
    os.makedirs(options.out, exist_ok=True)
    with open(os.path.join(options.out, "sanitize_bench.json"), "w") as out:
        json.dump({"summary": summary, "samples": samples}, out, indent=1)
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
