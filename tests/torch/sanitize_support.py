"""Shared by the H200 programs tests/torch/sanitize_*.py: run a scenario's buggy and fixed
variants under streamsafe.torch.sanitize and check the kinds found. Each program prints one JSON
line per variant and exits non-zero when a variant finds other kinds than expected."""

import json
import sys

import torch

import streamsafe.torch as sst


def run_variant(name, body, expected, exact=True):
    """Runs `body(session)` sanitized; `expected`: the set of kinds it must find (empty: none),
    exactly, or at least (exact=False)."""
    torch.cuda.synchronize()
    with sst.sanitize() as session:
        body(session)
        torch.cuda.synchronize()
    hazards = session.hazards
    kinds = {h.kind for h in hazards}
    ok = kinds == set(expected) if exact else set(expected) <= kinds
    for hazard in hazards:
        print(hazard, file=sys.stderr)
    print(json.dumps({"variant": name, "ok": ok, "expected": sorted(expected), "found": sorted(kinds),
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
    results = [run_variant(*variant) for variant in variants]
    sys.exit(0 if all(results) else 1)


def long_kernel(x, rounds=20):
    """Keeps a stream busy so the hazard is live on the device too, not only in the model."""
    for _ in range(rounds):
        x = torch.sin(x)
    return x
