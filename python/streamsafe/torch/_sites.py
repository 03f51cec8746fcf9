"""The user's line that made an op: the innermost frame outside torch and streamsafe."""

import os
import sys

import torch

_SKIP = (os.path.dirname(torch.__file__) + os.sep,
         os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep)
_names = {}
NO_FRAME = "<no Python frame: autograd or C++>"
SKIP_PREFIXES = _SKIP  # for the native tier, which walks the frames in C++ by the same rule


def _shown(filename):
    name = _names.get(filename)
    if name is None:
        try:
            rel = os.path.relpath(filename)
            name = rel if not rel.startswith("..") else filename
        except ValueError:
            name = filename
        _names[filename] = name
    return name


def user_site(depth=1):
    """'file:line' of the innermost frame that is not torch's or streamsafe's. Ops autograd runs
    on its own thread (backward) have no user frame."""
    frame = sys._getframe(depth)
    while frame is not None and frame.f_code.co_filename.startswith(_SKIP):
        frame = frame.f_back
    if frame is None:
        return NO_FRAME
    return f"{_shown(frame.f_code.co_filename)}:{frame.f_lineno}"
