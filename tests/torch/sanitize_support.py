"""Shared by the H200 programs tests/torch/sanitize_*.py: run a scenario's buggy and fixed
variants under streamsafe.torch.sanitize, in each tier built (python, native), and check the
kinds found. Each program prints one JSON line per variant and tier and exits non-zero when a
variant finds other kinds than expected in any tier."""

import json
import os
import sys

import torch

import streamsafe.torch as sst


def tiers():
    """The tiers to run: $STREAMSAFE_TORCH_SANITIZER_TIER if set, else every tier built."""
    chosen = os.environ.get("STREAMSAFE_TORCH_SANITIZER_TIER")
    if chosen:
        return [chosen]
    return ["python", "native"] if sst.native_tier_available() else ["python"]


def run_variant(name, body, expected, exact=True, tier="auto"):
    """Runs `body(session)` sanitized under `tier`; `expected`: the set of kinds it must find
    (empty: none), exactly, or at least (exact=False)."""
    torch.cuda.synchronize()
    with sst.sanitize(tier=tier) as session:
        body(session)
        torch.cuda.synchronize()
    hazards = session.hazards
    kinds = {h.kind for h in hazards}
    ok = kinds == set(expected) if exact else set(expected) <= kinds
    for hazard in hazards:
        print(hazard, file=sys.stderr)
    print(json.dumps({"variant": name, "tier": session.tier, "ok": ok, "expected": sorted(expected), "found": sorted(kinds),
                      "hazards": [{"kind": h.kind, "first": h.first.loc, "second": h.second.loc,
                                   "fix": h.fix} for h in hazards],
                      "model_errors": session.model_errors, "torch": torch.__version__}))
    return ok


def main(variants):
    """variants: [(name, body, expected kinds[, exact])]; exit status 0 when each found what it
    should."""
    if not torch.cuda.is_available():
        print("no CUDA device: these programs run on the H200", file=sys.stderr)
        sys.exit(77)
    results = [run_variant(*variant, tier=tier) for tier in tiers() for variant in variants]
    sys.exit(0 if all(results) else 1)


def long_kernel(x, rounds=20):
    """Keeps a stream busy so the hazard is live on the device too, not only in the model."""
    for _ in range(rounds):
        x = torch.sin(x)
    return x
