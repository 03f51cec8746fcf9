#!/usr/bin/env python3
"""The sanitizer's cost on the H200 (one run, all variants alternated so they see one host):

(a) the two-stream step of bench/torch/csan_two_stream_step.py, untracked, under CSAN
    (TORCH_CUDA_SANITIZER=1) and under streamsafe.torch.sanitize(), each in its own process
    (CSAN must start before CUDA does), ROUNDS rounds;
(b) a real model's training step (torchvision resnet18, random weights, batch 64 at 224x224,
    SGD with momentum, on one side stream fed by a data stream), untracked and under
    streamsafe.torch.sanitize() in each tier built (python; native: streamsafe._torch_ops),
    alternated in this process.

    PYTHONPATH=<build>/python bench/torch/sanitize_bench.py [--out DIR] [--rounds N]

writes DIR/sanitize_bench.json (every sample) and prints the medians and ratios.

    PYTHONPATH=<build>/python bench/torch/sanitize_bench.py --cpu [--out DIR] [--rounds N]

needs no GPU: the per-op cost of each tier on CPU ops run on a fake stream (every op goes the
whole way: ranges, call site, engine), OPS small elementwise ops and a small CNN's training
step, untracked and under each tier, alternated; writes DIR/sanitize_bench_cpu.json."""

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

    def timed(steps, tier):
        return time_under(tier, step, steps)
    return timed


def tiers():
    """The sanitizer's tiers built here, python first."""
    from streamsafe.torch import native_tier_available
    return ["python", "native"] if native_tier_available() else ["python"]


def time_under(tier, step, steps, fake_stream=None):
    """us per `step()` over `steps` steps after one warm-up, untracked (tier None) or sanitized
    under `tier` (on `fake_stream` when given: CPU ops tracked as a stream's); and the hazards."""
    import streamsafe.torch
    context = streamsafe.torch.sanitize(tier=tier) if tier else contextlib.nullcontext()
    with context as session:
        on_stream = session._on_stream(fake_stream) if tier and fake_stream else contextlib.nullcontext()
        with on_stream:
            step()
            start = time.perf_counter_ns()
            for _ in range(steps):
                step()
            elapsed = (time.perf_counter_ns() - start) / steps / 1000.0
    return elapsed, (len(session.hazards) if tier else None)


def ratio(a, b):
    return round(statistics.median(a) / statistics.median(b), 3)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--two-stream-steps", type=int, default=2000)
    parser.add_argument("--model-steps", type=int, default=20)
    parser.add_argument("--cpu", action="store_true", help="the per-op cost of each tier on CPU (no GPU)")
    parser.add_argument("--ops", type=int, default=10000, help="--cpu: small ops per sample")
    options = parser.parse_args()

    if options.cpu:
        return cpu_main(options)
    built = tiers()
    samples = {"two_stream": {"untracked": [], "csan": [], "streamsafe": []},
               "resnet18": {"untracked": [], **{tier: [] for tier in built}}}
    hazards = {"two_stream": [], "resnet18": {tier: [] for tier in built}}
    timed = resnet_step_timer()
    for _ in range(options.rounds):
        for mode in ("untracked", "csan", "streamsafe"):
            line = two_stream_step(mode, options.two_stream_steps)
            samples["two_stream"][mode].append(line["us_per_step"])
            if mode == "streamsafe":
                hazards["two_stream"].append(line["hazards"])
        for tier in [None] + built:
            us, found = timed(options.model_steps, tier)
            samples["resnet18"][tier or "untracked"].append(us)
            if tier:
                hazards["resnet18"][tier].append(found)

    two, model = samples["two_stream"], samples["resnet18"]
    summary = {
        "two_stream_us": {mode: statistics.median(v) for mode, v in two.items()},
        "two_stream_csan_cost": ratio(two["csan"], two["untracked"]),
        "two_stream_streamsafe_cost": ratio(two["streamsafe"], two["untracked"]),
        "resnet18_step_us": {mode: statistics.median(v) for mode, v in model.items()},
        "resnet18_cost": {tier: ratio(model[tier], model["untracked"]) for tier in built},
        "hazards": hazards,
    }
    import torch
    summary["torch"] = torch.__version__
    summary["device"] = torch.cuda.get_device_name()
    os.makedirs(options.out, exist_ok=True)
    with open(os.path.join(options.out, "sanitize_bench.json"), "w") as out:
        json.dump({"summary": summary, "samples": samples}, out, indent=1)
    print(json.dumps(summary, indent=1))


def cpu_programs(ops):
    """(name, step, aten ops per step) of the CPU comparison."""
    import torch
    import torch.nn.functional as F
    x, y = torch.ones(64), torch.ones(64)

    def small_ops():
        for _ in range(ops // 2):
            x.mul_(1.0)
            torch.add(x, y)

    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
                                torch.nn.Conv2d(8, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
                                torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(8, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    batch, labels = torch.randn(4, 3, 16, 16), torch.randint(0, 10, (4,))

    def train_step():
        loss = F.cross_entropy(model(batch), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return [("small_ops", small_ops, ops), ("cnn_step", train_step, count_ops(train_step))]


def count_ops(step):
    """The aten ops one `step()` hands the engine (under the Python tier, on a fake stream)."""
    import streamsafe.torch
    with streamsafe.torch.sanitize(tier="python") as session:
        with session._on_stream(1):
            step()
            before = session.engine.ops
            step()
            return session.engine.ops - before


def cpu_main(options):
    import torch
    built = tiers()
    programs = cpu_programs(options.ops)
    samples = {name: {mode: [] for mode in ["untracked"] + built} for name, _, _ in programs}
    steps = {"small_ops": 1, "cnn_step": 50}
    for _ in range(options.rounds):
        for name, step, _ in programs:
            for tier in [None] + built:
                us, _ = time_under(tier, step, steps[name], fake_stream=1)
                samples[name][tier or "untracked"].append(us)
    summary = {"machine": "CPU (no GPU; a shared, noisy machine)", "torch": torch.__version__,
               "tiers": built, "rounds": options.rounds}
    for name, _, ops in programs:
        medians = {mode: statistics.median(v) for mode, v in samples[name].items()}
        summary[name] = {
            "ops_per_step": ops,
            "us_per_step": medians,
            "cost": {tier: ratio(samples[name][tier], samples[name]["untracked"]) for tier in built},
            "added_us_per_op": {tier: round((medians[tier] - medians["untracked"]) / ops, 3) for tier in built},
        }
    os.makedirs(options.out, exist_ok=True)
    with open(os.path.join(options.out, "sanitize_bench_cpu.json"), "w") as out:
        json.dump({"summary": summary, "samples": samples}, out, indent=1)
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
