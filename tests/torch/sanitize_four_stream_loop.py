#!/usr/bin/env python3
"""The hand-made four-stream training loop (data -> preprocess -> compute -> sync, optimizer
step on the default stream), written the way tutorials present it: each tensor recorded on the
stream that produced it, three events created once and recorded every step, one pinned staging
buffer. It races: the optimizer reads gradients the sync stream writes without waiting for it,
the next step's forward reads parameters the optimizer writes, the host refills the staging
buffer during its upload, and blocks come back to their producer's pool while the consumer
stream still reads them (record_stream on the producer is not the one that was needed)."""

import torch
import torch.nn.functional as F

from sanitize_support import main

BATCH, SIDE, CLASSES = 64, 32, 10


def loop(session, steps=3):
    streams = {name: torch.cuda.Stream() for name in ("data", "preprocess", "compute", "sync")}
    for name, stream in streams.items():
        session.name_stream(stream, name)
    data, pre, compute, sync = streams.values()
    model = torch.nn.Sequential(torch.nn.Linear(3 * SIDE * SIDE, 512), torch.nn.ReLU(),
                                torch.nn.Linear(512, CLASSES)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    labels = torch.randint(0, CLASSES, (BATCH,), device="cuda")
    staging = torch.empty(BATCH, 3, SIDE, SIDE, dtype=torch.uint8, pin_memory=True)
    e1, e2, e3 = torch.cuda.Event(), torch.cuda.Event(), torch.cuda.Event()
    for stream in streams.values():
        stream.wait_stream(torch.cuda.current_stream())
    for _ in range(steps):
        staging.random_(0, 255)
        with torch.cuda.stream(data):
            batch = staging.to("cuda", non_blocking=True)
            batch.record_stream(data)
            e1.record(data)
        with torch.cuda.stream(pre):
            pre.wait_event(e1)
            x = batch.float().div_(255).sub_(0.5).flip(3)
            x.record_stream(pre)
            e2.record(pre)
        with torch.cuda.stream(compute):
            compute.wait_event(e2)
            loss = F.cross_entropy(model(x.flatten(1)), labels)
            loss.backward()
            for p in model.parameters():
                p.grad.record_stream(compute)
            e3.record(compute)
        with torch.cuda.stream(sync):
            sync.wait_event(e3)
            for p in model.parameters():
                p.grad.mul_(1.0)  # the all-reduce of one rank, in place on the gradients
        opt.step()
        opt.zero_grad()
    torch.cuda.synchronize()


if __name__ == "__main__":
    main([("handmade_four_stream_loop", loop, {"race", "host_race", "reuse_race"}, False)])
