"""Exit with ctest's skip code (77, SKIP_RETURN_CODE) when torch is not installed."""

import sys

try:
    import torch  # noqa: F401
except ImportError:
    print("torch is not installed: skipped", file=sys.stderr)
    sys.exit(77)
