"""Variable-length inference on a GPT-2-shaped model (transformers' GPT2Config, random weights,
fp16, no download): prompts of random length and batch, each followed by greedy decoding of a
random number of tokens with the KV cache. Reports peak allocated, peak and final reserved, and
tokens per second, for PyTorch's allocator (with and without expandable segments) and for
streamsafe's through torch's pluggable route. Each variant runs in its own process on the same
seeded trace:

    STREAMSAFE_TORCH_ALLOC_LIB=... PYTHONPATH=python python3 bench/torch/varlen_inference.py --out $OUT/varlen_inference.json
"""

import argparse
import json
import os
import random
import subprocess
import sys
import time

VARIANTS = {
    "native": {"env": {}},
    "native_expandable": {"env": {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}},
    "streamsafe": {"options": {}},
}


def trace(requests, seed):
    rng = random.Random(seed)
    return [(rng.randint(1, 8), rng.randint(16, 512), rng.randint(16, 128)) for _ in range(requests)]


def stats_reader(variant):
    import torch

    if "options" in VARIANTS[variant]:
        from streamsafe.torch._allocator import memory_stats

        return memory_stats
    return lambda: torch.cuda.memory_stats()


def run_variant(variant, requests, warmup, seed):
    import torch

    if "options" in VARIANTS[variant]:
        from streamsafe.torch._allocator import use_allocator

        use_allocator(**VARIANTS[variant]["options"])
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(seed)
    config = GPT2Config(n_positions=1024, n_embd=768, n_layer=12, n_head=12)
    model = GPT2LMHeadModel(config).to("cuda", torch.float16).eval()
    read_stats = stats_reader(variant)
    work = trace(warmup + requests, seed)
    generator = torch.Generator(device="cuda").manual_seed(seed)
    checksum, tokens, begin = 0, 0, None
    with torch.no_grad():
        for index, (batch, prompt, new) in enumerate(work):
            if index == warmup:
                torch.cuda.synchronize()
                begin = time.perf_counter()
            ids = torch.randint(0, config.vocab_size, (batch, prompt), device="cuda", generator=generator)
            out = model(input_ids=ids, use_cache=True)
            past = out.past_key_values
            for _ in range(new):
                ids = out.logits[:, -1:].argmax(-1)
                out = model(input_ids=ids, past_key_values=past, use_cache=True)
                past = out.past_key_values
            checksum += int(out.logits[:, -1].argmax(-1).sum())
            if index >= warmup:
                tokens += batch * (prompt + new)
            del out, past, ids
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - begin
    stats = read_stats()
    peak_allocated = stats["allocated_bytes.all.peak"]
    return {
        "variant": variant, "torch": torch.__version__, "device": torch.cuda.get_device_name(),
        "requests_timed": requests, "warmup_requests": warmup, "seed": seed,
        "tokens": tokens, "seconds": elapsed, "tokens_per_s": tokens / elapsed,
        "peak_allocated_bytes": peak_allocated, "peak_reserved_bytes": stats["reserved_bytes.all.peak"],
        "final_reserved_bytes": stats["reserved_bytes.all.current"],
        "peak_reserved_over_peak_allocated": stats["reserved_bytes.all.peak"] / peak_allocated,
        "num_alloc_retries": stats["num_alloc_retries"], "greedy_checksum": checksum,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=VARIANTS, help="run one variant in this process")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--requests", type=int, default=64)
    parser.add_argument("--warmup", type=int, default=4)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out")
    args = parser.parse_args()
    common = ["--requests", str(args.requests), "--warmup", str(args.warmup), "--seed", str(args.seed)]
    if args.variant:
        print(json.dumps(run_variant(args.variant, args.requests, args.warmup, args.seed)))
        return
    runs = []
    for variant in args.variants.split(","):
        env = dict(os.environ, **VARIANTS[variant].get("env", {}))
        run = subprocess.run([sys.executable, __file__, "--variant", variant] + common, env=env,
                             capture_output=True, text=True)
        if run.returncode != 0:
            runs.append({"variant": variant, "error": run.stderr.strip()[-2000:]})
        else:
            runs.append(json.loads(run.stdout.strip().splitlines()[-1]))
        print(json.dumps(runs[-1]), flush=True)
    native = next((r for r in runs if r["variant"] == "native" and "error" not in r), None)
    if native:
        for r in runs:
            if "error" not in r:
                r["tokens_per_s_vs_native"] = r["tokens_per_s"] / native["tokens_per_s"]
    if args.out:
        with open(args.out, "w") as out:
            json.dump({"runs": runs}, out, indent=2)
            out.write("\n")


if __name__ == "__main__":
    main()
