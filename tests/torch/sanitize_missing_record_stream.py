#!/usr/bin/env python3
"""Missing record_stream: a tensor made on the default stream is read on a side stream and
freed; the caching allocator hands its block to the next allocation on the default stream,
whose write races with the side stream's read. With `x.record_stream(side)`, nothing.

    sanitize_missing_record_stream.py [--allocator]

--allocator: the same under streamsafe's allocator (streamsafe.torch.use_allocator), which must
then feed the sanitizer its lifetimes (Session.allocator_alloc/free/record_stream)."""

import sys

import torch

from sanitize_support import long_kernel, main

N = 1 << 20


def step(session, record):
    side = torch.cuda.Stream()
    session.name_stream(side, "side")
    x = torch.ones(N, device="cuda")
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        y = long_kernel(x)
        if record:
            x.record_stream(side)
    ptr = x.data_ptr()
    del x
    z = torch.empty(N, device="cuda")
    if not record and z.data_ptr() != ptr:
        print(f"note: the allocator did not reuse the block ({z.data_ptr():#x} != {ptr:#x})", file=sys.stderr)
    z.fill_(7)
    torch.cuda.current_stream().wait_stream(side)
    return y, z


if __name__ == "__main__":
    if "--allocator" in sys.argv:
        import streamsafe.torch as sst
        sst.use_allocator()
    main([("missing_record_stream", lambda s: step(s, record=False), {"reuse_race"}),
          ("with_record_stream", lambda s: step(s, record=True), set())])
