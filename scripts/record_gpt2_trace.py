#!/usr/bin/env python3
"""Records a GPT-2-shaped training run's allocation trace with PyTorch's allocator (needs CUDA,
torch and transformers; the model is built from a config with random weights: no downloads).

    scripts/record_gpt2_trace.py OUT.csv.gz [--steps 4] [--layers 12] [--batch 8] [--seq 512]

The whole process is recorded from before the first CUDA allocation (as resnet50_train's trace
was), then converted with scripts/snapshot_to_csv.py's rows(). Also prints PyTorch's own peak
reserved / peak allocated for the run.
"""
import argparse
import gzip
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("output")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=512)
    options = parser.parse_args()

    import torch
    from transformers import GPT2Config, GPT2LMHeadModel
    from snapshot_to_csv import rows

    torch.cuda.memory._record_memory_history(max_entries=2_000_000)
    torch.manual_seed(0)
    config = GPT2Config(n_layer=options.layers, n_positions=max(1024, options.seq))
    model = GPT2LMHeadModel(config).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for _ in range(options.steps):
        tokens = torch.randint(0, config.vocab_size, (options.batch, options.seq), device="cuda")
        loss = model(tokens, labels=tokens).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    snapshot = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    count = 0
    with gzip.open(options.output, "wt", newline="") as out:
        out.write("action,addr,size,stream\n")
        for action, addr, size, stream in rows(snapshot, 0):
            out.write(f"{action},{addr},{size},{stream}\n")
            count += 1
    stats = torch.cuda.memory_stats()
    print(f"{count} events; peak reserved {stats['reserved_bytes.all.peak']} "
          f"peak allocated {stats['allocated_bytes.all.peak']} "
          f"ratio {stats['reserved_bytes.all.peak'] / stats['allocated_bytes.all.peak']:.4f}")


if __name__ == "__main__":
    main()
