#!/usr/bin/env python3
"""A non_blocking device-to-host copy into pinned memory, read on the host before the stream
is synchronized. With `torch.cuda.current_stream().synchronize()` first, nothing."""

import torch

from sanitize_support import long_kernel, main

N = 1 << 20


def step(session, sync):
    pinned = torch.empty(N, pin_memory=True)
    result = long_kernel(torch.ones(N, device="cuda"))
    pinned.copy_(result, non_blocking=True)
    if sync:
        torch.cuda.current_stream().synchronize()
    return float(pinned.sum())


if __name__ == "__main__":
    main([("d2h_read_before_sync", lambda s: step(s, sync=False), {"host_race"}),
          ("d2h_read_after_sync", lambda s: step(s, sync=True), set())])
