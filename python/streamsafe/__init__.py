"""streamsafe for Python: the happens-before hazard engine (streamsafe.Engine, docs/hazards.md)
and the PyTorch integration (streamsafe.torch: the sanitizer, and the allocator when built)."""

from streamsafe._engine import Engine, UsageError

__all__ = ["Engine", "UsageError"]
