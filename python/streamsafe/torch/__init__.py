"""streamsafe for PyTorch.

- sanitize(mode="report"|"raise", tier="auto"|"native"|"python"): a context manager that runs streamsafe's hazard engine on the
  program's ops and names each missing wait_event / wait_stream / record_stream / sync with the
  fix (streamsafe.torch.sanitize; STREAMSAFE_TORCH_SANITIZER=1 sanitizes the whole program). The
  native tier (a C++ op observer, when built) is the default for mode="report".
- annotate(reads, writes, stream): declares work the sanitizer cannot see (custom kernels).
- use_allocator(**options), memory_stats(): streamsafe's allocator as torch's, where built.
"""

import importlib

from streamsafe.torch.sanitize import HazardError, Hazard, Session, active_session, annotate, sanitize
from streamsafe.torch.sanitize import native_tier_available
from streamsafe.torch.sanitize import _from_environment

__all__ = ["HazardError", "Hazard", "Session", "active_session", "annotate", "sanitize", "native_tier_available",
           "use_allocator", "memory_stats"]


def _allocator_module():
    try:
        module = importlib.import_module("streamsafe.torch._allocator")
    except ImportError as error:
        raise ImportError("streamsafe.torch: the allocator for torch is not part of this build "
                          f"(streamsafe/torch/_allocator.py: {error})") from error
    return module


def use_allocator(**options):
    """Installs streamsafe's allocator as torch's (see streamsafe.torch._allocator)."""
    return _allocator_module().use_allocator(**options)


def memory_stats(*args, **kwargs):
    """streamsafe's allocator's statistics under PyTorch's key names."""
    return _allocator_module().memory_stats(*args, **kwargs)


_from_environment()
