#!/usr/bin/env python3
"""A fresh allocation used on another stream without a wait: the caching allocator makes the
block on the current (default) stream, where its previous lifetime's kernel may still run; the
side stream writes it at once. With `side.wait_stream(torch.cuda.current_stream())`, nothing."""

import torch

from sanitize_support import long_kernel, main

N = 1 << 20


def step(session, wait):
    side = torch.cuda.Stream()
    session.name_stream(side, "side")
    old = long_kernel(torch.ones(N, device="cuda"))
    del old  # its block goes back to the default stream's pool, its kernel still in flight
    fresh = torch.empty(N, device="cuda")
    if wait:
        side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fresh.fill_(1)
        fresh.record_stream(side)
    torch.cuda.current_stream().wait_stream(side)


if __name__ == "__main__":
    main([("fresh_alloc_no_wait", lambda s: step(s, wait=False), {"reuse_race"}),
          ("fresh_alloc_with_wait", lambda s: step(s, wait=True), set())])
