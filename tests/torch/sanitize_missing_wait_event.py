#!/usr/bin/env python3
"""Missing wait_event: the consumer stream reads what the producer stream writes, with and
without `consumer.wait_event(ev)`."""

import torch

from sanitize_support import long_kernel, main

N = 1 << 20


def step(session, wait):
    producer, consumer = torch.cuda.Stream(), torch.cuda.Stream()
    session.name_stream(producer, "producer")
    session.name_stream(consumer, "consumer")
    x = torch.empty(N, device="cuda")
    producer.wait_stream(torch.cuda.current_stream())
    consumer.wait_stream(torch.cuda.current_stream())
    ev = torch.cuda.Event()
    with torch.cuda.stream(producer):
        x.copy_(long_kernel(torch.ones(N, device="cuda")))
        ev.record(producer)
    with torch.cuda.stream(consumer):
        if wait:
            consumer.wait_event(ev)
        y = x * 2
    torch.cuda.current_stream().wait_stream(consumer)
    torch.cuda.current_stream().wait_stream(producer)
    return y


if __name__ == "__main__":
    main([("missing_wait_event", lambda s: step(s, wait=False), {"race"}),
          ("with_wait_event", lambda s: step(s, wait=True), set())])
