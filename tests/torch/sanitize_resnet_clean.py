#!/usr/bin/env python3
"""No reports on a correct multi-stream training step of a real model: torchvision's resnet18
with random weights; batches uploaded on a data stream from a pinned buffer the host refills
only after the upload's event; compute waits the upload and records the batch on itself; views
(view, permute), in-place ops (sub_, mul_, ReLU(inplace)), out= (argmax), backward and SGD with
momentum on the compute stream; the loss read on the host after the compute stream's sync."""

import torch
import torch.nn.functional as F
import torchvision

from sanitize_support import main

BATCH, SIDE = 16, 112


def training(session, steps=3):
    data, compute = torch.cuda.Stream(), torch.cuda.Stream()
    session.name_stream(data, "data")
    session.name_stream(compute, "compute")
    model = torchvision.models.resnet18(weights=None).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    labels = torch.randint(0, 1000, (BATCH,), device="cuda")
    staging = torch.empty(BATCH * 3 * SIDE * SIDE, pin_memory=True)
    pred = torch.empty(BATCH, dtype=torch.long, device="cuda")
    compute.wait_stream(torch.cuda.current_stream())
    data.wait_stream(torch.cuda.current_stream())
    uploaded = torch.cuda.Event()
    losses = []
    for step in range(steps):
        if step:
            uploaded.synchronize()
        staging.normal_()
        with torch.cuda.stream(data):
            flat = staging.to("cuda", non_blocking=True)
            uploaded.record(data)
        with torch.cuda.stream(compute):
            compute.wait_event(uploaded)
            flat.record_stream(compute)
            x = flat.view(BATCH, 3, SIDE, SIDE).permute(0, 1, 3, 2).contiguous()
            x.sub_(0.5).mul_(2.0)
            out = model(x)
            loss = F.cross_entropy(out, labels)
            opt.zero_grad()
            loss.backward()
            opt.step()
            torch.argmax(out.detach(), 1, out=pred)
            correct = torch.eq(pred, labels).sum()
            losses.append((loss.item(), correct.item()))
    torch.cuda.current_stream().wait_stream(compute)
    torch.cuda.current_stream().wait_stream(data)
    return losses


if __name__ == "__main__":
    main([("resnet18_two_stream_training", training, set())])
