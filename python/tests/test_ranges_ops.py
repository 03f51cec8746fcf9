"""Op schema to byte ranges: the bytes each tensor touches (views, strides, transposes,
expands, slices at an offset) and which tensors an op writes (in-place, out=, foreach)."""

import unittest

import torch_or_skip  # noqa: F401
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from streamsafe.torch import _ops, _ranges


def ranges(t):
    """byte_ranges relative to the storage's first byte."""
    base = _ranges.storage_of(t)[0]
    return [(p - base, n) for p, n in _ranges.byte_ranges(t)]


class ByteRangesTest(unittest.TestCase):
    def test_contiguous_tensor_is_its_bytes(self):
        self.assertEqual(ranges(torch.zeros(3, 5)), [(0, 60)])
        self.assertEqual(ranges(torch.zeros(4, dtype=torch.float64)), [(0, 32)])

    def test_slice_at_an_offset(self):
        self.assertEqual(ranges(torch.zeros(10)[2:5]), [(8, 12)])
        self.assertEqual(ranges(torch.zeros(4, 4)[1:3]), [(16, 32)])

    def test_column_slice_is_its_pieces(self):
        self.assertEqual(ranges(torch.zeros(4, 4)[:, 1:3]), [(4, 8), (20, 8), (36, 8), (52, 8)])

    def test_step_slice_is_its_elements(self):
        self.assertEqual(ranges(torch.zeros(8)[1::2]), [(4, 4), (12, 4), (20, 4), (28, 4)])

    def test_transpose_covers_the_same_bytes(self):
        self.assertEqual(ranges(torch.zeros(4, 3).t()), [(0, 48)])
        self.assertEqual(ranges(torch.zeros(2, 3, 4).permute(2, 0, 1)[1:]), [(4, 12), (20, 12), (36, 12),
                                                                              (52, 12), (68, 12), (84, 12)])

    def test_expand_touches_the_source_once(self):
        self.assertEqual(ranges(torch.zeros(3)[1:].expand(5, 2)), [(4, 8)])

    def test_many_pieces_become_the_covering_interval(self):
        column = torch.zeros(200, 4)[:, 1]
        self.assertEqual(ranges(column), [(4, (199 * 4 + 1) * 4)])

    def test_empty_tensor_touches_nothing(self):
        self.assertEqual(ranges(torch.zeros(4)[2:2]), [])


class Recorder(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        result = func(*args, **kwargs)
        sig = _ops.signature(func)
        if not sig.skip:
            self.calls.append((sig.name, [(t.data_ptr(), w) for t, w in _ops.accesses(sig, args, kwargs, result)]))
        return result


class SchemaWritesTest(unittest.TestCase):
    def record(self, fn):
        with Recorder() as recorder:
            fn()
        return recorder.calls

    def test_in_place_writes_self_reads_other(self):
        a, b = torch.ones(4), torch.ones(4)
        self.assertEqual(self.record(lambda: a.add_(b)), [("aten::add_", [(a.data_ptr(), True), (b.data_ptr(), False)])])

    def test_out_argument_is_written(self):
        a, b, out = torch.ones(4), torch.ones(4), torch.empty(4)
        (call,) = self.record(lambda: torch.mul(a, b, out=out))
        self.assertEqual(sorted(call[1]), sorted([(a.data_ptr(), False), (b.data_ptr(), False), (out.data_ptr(), True)]))

    def test_foreach_in_place_lists_are_written(self):
        xs, ys = [torch.ones(3), torch.ones(5)], [torch.ones(3), torch.ones(5)]
        (call,) = self.record(lambda: torch._foreach_add_(xs, ys))
        self.assertEqual(call[1], [(xs[0].data_ptr(), True), (xs[1].data_ptr(), True),
                                   (ys[0].data_ptr(), False), (ys[1].data_ptr(), False)])

    def test_functional_result_is_written(self):
        a = torch.ones(4)
        out = []
        (call,) = self.record(lambda: out.append(a * 2))
        self.assertEqual(call[1], [(a.data_ptr(), False), (out[0].data_ptr(), True)])

    def test_views_and_empty_touch_nothing(self):
        a = torch.ones(4, 4)
        self.assertEqual(self.record(lambda: (a.t(), a[1:], a.view(16), torch.empty(3))), [])


if __name__ == "__main__":
    unittest.main()
