"""Which tensors an op reads and writes, from its schema.

An argument whose alias info says `is_write` (in-place `self`, `out=`, the lists of in-place
foreach ops) is written; every other tensor argument is read; a returned tensor that aliases no
argument is a fresh result, written by the op. View ops (a return aliasing an argument without
writing it) and ops that launch no kernel touch no bytes and are skipped.
"""

import torch

# Ops that make or relabel tensors without touching their bytes.
_NO_KERNEL = frozenset({
    "aten::empty", "aten::empty_strided", "aten::empty_like", "aten::new_empty",
    "aten::new_empty_strided", "aten::set_", "aten::detach", "aten::lift_fresh",
    "aten::alias", "aten::record_stream", "aten::_has_compatible_shallow_copy_type",
    "aten::is_pinned", "aten::_pin_memory", "aten::resize_",
    # torch.autograd.profiler.record_function (the optimizers use it): a handle, no kernel
    "profiler::_record_function_enter", "profiler::_record_function_enter_new",
    "profiler::_record_function_exit",
})


class Signature:
    """The access pattern of one op overload, computed once and cached on the overload."""

    __slots__ = ("skip", "args", "kwargs", "name")

    def __init__(self, func):
        schema = func._schema
        self.name = schema.name
        views = any(r.alias_info is not None and not r.alias_info.is_write for r in schema.returns)
        self.skip = views or schema.name in _NO_KERNEL
        self.args = [_is_write(a) for a in schema.arguments if not a.kwarg_only]
        self.kwargs = {a.name: _is_write(a) for a in schema.arguments}


def _is_write(argument):
    return argument.alias_info is not None and argument.alias_info.is_write


_signatures = {}


def signature(func):
    sig = _signatures.get(func)
    if sig is None:
        sig = _signatures[func] = Signature(func)
    return sig


def _tensors(value, out):
    if isinstance(value, torch.Tensor):
        out.append(value)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _tensors(item, out)


def accesses(sig, args, kwargs, result):
    """[(tensor, is_write)] for one call, arguments first, then results that are no argument."""
    touched = []
    for is_write, value in zip(sig.args, args):
        _add(touched, value, is_write)
    for name, value in kwargs.items():
        _add(touched, value, sig.kwargs.get(name, False))
    seen = {id(t) for t, _ in touched}
    fresh = []
    _tensors(result, fresh)
    for tensor in fresh:
        if id(tensor) not in seen:
            touched.append((tensor, True))
    return touched


def _add(touched, value, is_write):
    found = []
    _tensors(value, found)
    for tensor in found:
        touched.append((tensor, is_write))
