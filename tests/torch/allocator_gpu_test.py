"""streamsafe's allocator as torch's, on a GPU: record_stream wired, a real training step, graph
capture, out of memory. Run on the GPU machine (docs/pytorch.md, "The allocator"):

    STREAMSAFE_TORCH_ALLOC_LIB=... PYTHONPATH=python python3 tests/torch/allocator_gpu_test.py [--out FILE]

Each check runs in a fresh process (torch's allocator is chosen before CUDA starts); the exit
status is 0 only when every check passed.
"""

import argparse
import subprocess
import sys
import time

SLEEP_CYCLES = 200_000_000  # about 0.1 s of torch.cuda._sleep on an H200
COUNT = 1 << 20  # float32 elements: 4 MiB, well away from the small pool


def start(**options):
    from streamsafe.torch._allocator import use_allocator

    return use_allocator(**options)


def freed_while_read(record):
    """A block is freed on the main stream while a kernel on a side stream still reads it (the
    side stream sleeps first), then the main stream allocates the same size and overwrites it.
    Returns the values the side stream's copy saw: all 7 when the block was held for it."""
    import torch

    main = torch.cuda.current_stream()
    side = torch.cuda.Stream()
    x = torch.full((COUNT,), 7.0, device="cuda")
    seen = torch.zeros(COUNT, device="cuda")
    side.wait_stream(main)
    with torch.cuda.stream(side):
        torch.cuda._sleep(SLEEP_CYCLES)
        seen.copy_(x)
    if record:
        x.record_stream(side)
    old = x.data_ptr()
    del x
    y = torch.empty(COUNT, device="cuda")
    y.fill_(99.0)
    reused = y.data_ptr() == old
    torch.cuda.synchronize()
    return seen, reused


def check_record_stream():
    import torch

    start()
    seen, reused = freed_while_read(record=False)  # the bug, to show this check can see it
    if not reused or bool((seen == 7.0).all()):
        return False, f"control without record_stream did not race (reused={reused}); the check proves nothing"
    seen, reused = freed_while_read(record=True)
    ok = bool((seen == 7.0).all())
    wrong = int((seen != 7.0).sum())
    return ok, f"with record_stream: {wrong} of {COUNT} values overwritten, block reused at once: {reused}"


def check_training_step():
    import torch

    start()
    from streamsafe.torch._allocator import memory_stats, patch_memory_apis

    patch_memory_apis()
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 64, 3, padding=1), torch.nn.BatchNorm2d(64), torch.nn.ReLU(),
        torch.nn.Conv2d(64, 64, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(), torch.nn.Linear(64, 10)).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    inputs = torch.randn(64, 3, 32, 32, device="cuda")
    labels = torch.randint(0, 10, (64,), device="cuda")
    copy_stream = torch.cuda.Stream()
    losses = []
    for _ in range(30):
        # The next batch is made on a side stream and handed over, as a prefetching loader does.
        with torch.cuda.stream(copy_stream):
            batch = inputs + 0.01 * torch.randn_like(inputs)
        torch.cuda.current_stream().wait_stream(copy_stream)
        batch.record_stream(torch.cuda.current_stream())
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(batch), labels)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    stats = memory_stats()
    ok = losses[-1] < losses[0] and torch.cuda.memory_allocated() == stats["allocated_bytes.all.current"] > 0
    ok = ok and stats["reserved_bytes.all.current"] >= stats["allocated_bytes.all.current"]
    return ok, (f"loss {losses[0]:.3f} -> {losses[-1]:.3f}; allocated {stats['allocated_bytes.all.current']}, "
                f"peak {stats['allocated_bytes.all.peak']}, reserved {stats['reserved_bytes.all.current']}")


def check_free_during_capture():
    import torch

    start()
    from streamsafe.torch import _allocator

    library = _allocator._state.library
    capture = torch.cuda.Stream()
    with torch.cuda.stream(capture):
        static = torch.ones(COUNT, device="cuda")
        doomed = torch.ones(COUNT, device="cuda")
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=capture):
        static.mul_(2.0)
        del doomed  # freed while its allocation stream captures
        deferred_inside = library.deferred_frees()
    after = torch.empty(16, device="cuda")  # the next call into the allocator does the free
    deferred_after = library.deferred_frees()
    # Capture records the multiply without running it: one replay doubles the ones once.
    graph.replay()
    torch.cuda.synchronize()
    replayed = bool((static == 2.0).all())
    ok = deferred_inside == 1 and deferred_after == 0 and replayed
    del after
    return ok, (f"deferred during capture: {deferred_inside}, after: {deferred_after}, "
                f"replay doubled every value: {replayed} (first value {static[0].item()})")


def check_allocation_during_capture():
    import torch

    start()
    static = torch.ones(COUNT, device="cuda")
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph):
            _ = static * 2.0  # a new tensor: an allocation on the capturing stream
    except RuntimeError as error:
        message = str(error) + " " + str(error.__context__ or "")
        return "during CUDA graph capture" in message, f"raised: {message.splitlines()[0][:300]}"
    return False, "allocation during capture did not raise"


def check_out_of_memory():
    import torch

    start()
    try:
        torch.empty(10 << 40, dtype=torch.uint8, device="cuda")  # 10 TiB
    except RuntimeError as error:
        message = str(error)
        after = torch.ones(16, device="cuda")  # the allocator is still usable
        ok = "10995116277760" in message and bool((after == 1).all())
        return ok, f"raised: {message.splitlines()[0][:300]}"
    return False, "a 10 TiB allocation did not raise"


CHECKS = {
    "out_of_memory": check_out_of_memory,
    "record_stream": check_record_stream,
    "training_step": check_training_step,
    "free_during_capture": check_free_during_capture,
    "allocation_during_capture": check_allocation_during_capture,
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", choices=CHECKS, help="run one check in this process")
    parser.add_argument("--out", help="also write the report here")
    args = parser.parse_args()
    if args.check:
        ok, detail = CHECKS[args.check]()
        print(f"{'PASS' if ok else 'FAIL'} {args.check}: {detail}")
        sys.exit(0 if ok else 1)
    lines, failed = [], 0
    for name in CHECKS:
        begin = time.time()
        run = subprocess.run([sys.executable, __file__, "--check", name], capture_output=True, text=True)
        verdict = [l for l in run.stdout.splitlines() if l.startswith(("PASS", "FAIL"))]
        line = verdict[-1] if verdict else f"FAIL {name}: exit {run.returncode}: {run.stderr.strip()[-600:]}"
        failed += run.returncode != 0 or not line.startswith("PASS")
        lines.append(f"{line} ({time.time() - begin:.1f} s)")
        print(lines[-1], flush=True)
    if args.out:
        with open(args.out, "w") as out:
            out.write("\n".join(lines) + "\n")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
