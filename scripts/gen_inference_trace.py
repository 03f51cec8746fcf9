#!/usr/bin/env python3
"""Generates a deterministic allocation trace of variable-length transformer inference.

Shapes change with every request (sequence lengths drawn from a seeded generator), which is where
caching allocators fragment most: a continuous-batching server keeps up to --concurrent requests
in flight, each holding a KV cache that grows token by token, while every forward pass allocates
and frees activations sized by the batch's lengths. Output: `action,addr,size,stream` CSV
(GUIDE.md section 5), free_requested and free_completed at the same point.

With --streams S > 1, request r runs its forward passes and holds its KV cache on stream r % S,
and each forward pass on a stream other than 0 hands its logits to a sampler on stream 0: the
logits block is allocated on the request's stream, used on stream 0 (a `record_stream` row, the
replay's extension of the format) and freed, so its memory waits for stream 0's work.

    scripts/gen_inference_trace.py out.csv.gz [--requests 400] [--seed 1] [--streams 1]
"""
import argparse
import gzip
import random

LAYERS = 24
HIDDEN = 2048
HEADS = 16
BYTES = 2  # fp16


class Trace:
    def __init__(self):
        self.rows = ["action,addr,size,stream"]
        self.next_addr = 1 << 32

    def alloc(self, size, stream=0):
        addr = self.next_addr
        self.next_addr += (size + 511) // 512 * 512 + 512  # unique, never reused: identities only
        self.rows.append(f"alloc,{addr},{size},{stream}")
        return addr, size, stream

    def record_stream(self, block, stream):
        self.rows.append(f"record_stream,{block[0]},0,{stream}")

    def free(self, block):
        addr, size, stream = block
        self.rows.append(f"free_requested,{addr},{size},{stream}")
        self.rows.append(f"free_completed,{addr},{size},{stream}")


VOCAB = 32000
SAMPLER_STREAM = 0


def forward(trace, tokens, context, stream=0):
    """One forward pass over `tokens` new tokens attending to `context` tokens, on `stream`."""
    hidden = trace.alloc(tokens * HIDDEN * BYTES, stream)
    for _ in range(LAYERS):
        qkv = trace.alloc(3 * tokens * HIDDEN * BYTES, stream)
        scores = trace.alloc(HEADS * tokens * context * BYTES, stream)
        trace.free(scores)
        attn = trace.alloc(tokens * HIDDEN * BYTES, stream)
        trace.free(qkv)
        mlp = trace.alloc(4 * tokens * HIDDEN * BYTES, stream)
        trace.free(attn)
        trace.free(mlp)
    if stream != SAMPLER_STREAM:  # the last token's logits go to the sampler's stream
        logits = trace.alloc(VOCAB * BYTES, stream)
        trace.record_stream(logits, SAMPLER_STREAM)
        trace.free(logits)
    trace.free(hidden)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("output")
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--concurrent", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--streams", type=int, default=1)
    options = parser.parse_args()
    rng = random.Random(options.seed)
    trace = Trace()
    active = []  # [remaining tokens to generate, context length, kv cache blocks]
    started = 0
    while started < options.requests or active:
        while started < options.requests and len(active) < options.concurrent:
            prompt = rng.randint(16, 2048)
            stream = started % options.streams
            forward(trace, prompt, prompt, stream)  # prefill
            kv = [trace.alloc(2 * prompt * HIDDEN * BYTES // LAYERS * LAYERS, stream)]
            active.append([rng.randint(1, 256), prompt, kv, stream])
            started += 1
        for request in active:  # one decode step for each request in flight
            request[1] += 1
            forward(trace, 1, request[1], request[3])
            if request[1] % 64 == 0:  # the KV cache grows in pages of 64 tokens
                request[2].append(trace.alloc(2 * 64 * HIDDEN * BYTES, request[3]))
            request[0] -= 1
        for request in [r for r in active if r[0] == 0]:
            for block in request[2]:
                trace.free(block)
            active.remove(request)
    opener = gzip.open if options.output.endswith(".gz") else open
    with opener(options.output, "wt") as out:
        out.write("\n".join(trace.rows) + "\n")


if __name__ == "__main__":
    main()
