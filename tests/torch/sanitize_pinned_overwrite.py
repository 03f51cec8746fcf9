#!/usr/bin/env python3
"""A pinned staging buffer refilled by the host while its non_blocking upload may still run.
With an event recorded after the upload and `ev.synchronize()` before the refill, nothing."""

import torch

from sanitize_support import main

N = 1 << 22


def step(session, sync):
    copy = torch.cuda.Stream()
    session.name_stream(copy, "copy")
    staging = torch.empty(N, pin_memory=True)
    device = [torch.empty(N, device="cuda") for _ in range(2)]
    copy.wait_stream(torch.cuda.current_stream())
    uploaded = torch.cuda.Event()
    for batch in range(2):
        if sync and batch:
            uploaded.synchronize()
        staging.fill_(batch)  # the host writes the next batch
        with torch.cuda.stream(copy):
            device[batch].copy_(staging, non_blocking=True)
            uploaded.record(copy)
    torch.cuda.current_stream().wait_stream(copy)


if __name__ == "__main__":
    main([("pinned_refill_during_upload", lambda s: step(s, sync=False), {"host_race"}),
          ("pinned_refill_after_sync", lambda s: step(s, sync=True), set())])
