"""Op schema to byte ranges: the bytes each tensor touches (views, strides, transposes,
expands, slices at an offset) and which tensors an op writes (in-place, out=, foreach), under
each tier: the Python tier's _ranges/_ops and the native tier's C++ twins, which must agree."""

import unittest

import torch_or_skip  # noqa: F401
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from streamsafe.torch import _ops, _ranges
from tiers import accesses, skip_unless_built


def tier_byte_ranges(tier):
    if tier == "native":
        from streamsafe import _torch_ops
        return _torch_ops.byte_ranges
    return _ranges.byte_ranges


class ByteRangesTest(unittest.TestCase):
    TIER = "python"

    def setUp(self):
        skip_unless_built(self, self.TIER)

    def ranges(self, t):
        """The tier's byte ranges relative to the storage's first byte."""
        base = _ranges.storage_of(t)[0]
        return [(p - base, n) for p, n in tier_byte_ranges(self.TIER)(t)]

    def test_contiguous_tensor_is_its_bytes(self):
        self.assertEqual(self.ranges(torch.zeros(3, 5)), [(0, 60)])
        self.assertEqual(self.ranges(torch.zeros(4, dtype=torch.float64)), [(0, 32)])

    def test_slice_at_an_offset(self):
        self.assertEqual(self.ranges(torch.zeros(10)[2:5]), [(8, 12)])
        self.assertEqual(self.ranges(torch.zeros(4, 4)[1:3]), [(16, 32)])

    def test_column_slice_is_its_pieces(self):
        self.assertEqual(self.ranges(torch.zeros(4, 4)[:, 1:3]), [(4, 8), (20, 8), (36, 8), (52, 8)])

    def test_step_slice_is_its_elements(self):
        self.assertEqual(self.ranges(torch.zeros(8)[1::2]), [(4, 4), (12, 4), (20, 4), (28, 4)])

    def test_transpose_covers_the_same_bytes(self):
        self.assertEqual(self.ranges(torch.zeros(4, 3).t()), [(0, 48)])
        self.assertEqual(self.ranges(torch.zeros(2, 3, 4).permute(2, 0, 1)[1:]), [(4, 12), (20, 12), (36, 12),
                                                                              (52, 12), (68, 12), (84, 12)])

    def test_expand_touches_the_source_once(self):
        self.assertEqual(self.ranges(torch.zeros(3)[1:].expand(5, 2)), [(4, 8)])

    def test_many_pieces_become_the_covering_interval(self):
        column = torch.zeros(200, 4)[:, 1]
        self.assertEqual(self.ranges(column), [(4, (199 * 4 + 1) * 4)])

    def test_empty_tensor_touches_nothing(self):
        self.assertEqual(self.ranges(torch.zeros(4)[2:2]), [])


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


class NativeByteRangesTest(ByteRangesTest):
    TIER = "native"


def starts(tier, program):
    """[(op, [(first byte, is_write)])] the engine received for each op of `program`."""
    return [(op, sorted((p, w) for p, _, w in ranges)) for op, _, ranges in accesses(tier, program)]


class TierWritesTest(unittest.TestCase):
    """SchemaWritesTest's cases end to end: what each tier hands the engine."""

    TIER = "python"

    def setUp(self):
        skip_unless_built(self, self.TIER)

    def test_in_place_writes_self_reads_other(self):
        a, b = torch.ones(4), torch.ones(4)
        self.assertEqual(starts(self.TIER, lambda: a.add_(b)),
                         [("aten::add_", sorted([(a.data_ptr(), True), (b.data_ptr(), False)]))])

    def test_out_argument_is_written(self):
        a, b, out = torch.ones(4), torch.ones(4), torch.empty(4)
        self.assertEqual(starts(self.TIER, lambda: torch.mul(a, b, out=out)),
                         [("aten::mul", sorted([(a.data_ptr(), False), (b.data_ptr(), False), (out.data_ptr(), True)]))])

    def test_foreach_in_place_lists_are_written(self):
        xs, ys = [torch.ones(3), torch.ones(5)], [torch.ones(3), torch.ones(5)]
        self.assertEqual(starts(self.TIER, lambda: torch._foreach_add_(xs, ys)),
                         [("aten::_foreach_add_", sorted([(xs[0].data_ptr(), True), (xs[1].data_ptr(), True),
                                                          (ys[0].data_ptr(), False), (ys[1].data_ptr(), False)]))])

    def test_functional_result_is_written(self):
        a = torch.ones(4)
        out = []
        (call,) = starts(self.TIER, lambda: out.append(a * 2))
        self.assertEqual(call, ("aten::mul", sorted([(a.data_ptr(), False), (out[0].data_ptr(), True)])))

    def test_views_and_empty_touch_nothing(self):
        a = torch.ones(4, 4)
        self.assertEqual(starts(self.TIER, lambda: (a.t(), a[1:], a.view(16), torch.empty(3))), [])


class NativeTierWritesTest(TierWritesTest):
    TIER = "native"


class TierParityTest(unittest.TestCase):
    """The native tier hands the engine what the Python tier does, op for op, on views, strides,
    in-place ops, out= and foreach lists (pointers of fresh results compared by size only)."""

    def setUp(self):
        skip_unless_built(self, "native")
        torch.manual_seed(0)
        self.m = torch.randn(8, 6)
        self.v = torch.randn(6)
        self.out = torch.empty(8, 6)
        self.xs = [torch.randn(3), torch.randn(5, 2)]
        self.ys = [torch.randn(3), torch.randn(5, 2)]
        self.known = [self.m, self.v, self.out] + self.xs + self.ys

    def where(self, ptr, size):
        for i, t in enumerate(self.known):
            base, nbytes = _ranges.storage_of(t)
            if base <= ptr < base + nbytes:
                return (str(i), ptr - base, size)
        return ("fresh", -1, size)

    def normalized(self, tier, program):
        return [(op, sid, sorted((self.where(p, n), w) for p, n, w in ranges))
                for op, sid, ranges in accesses(tier, program)]

    def check(self, program):
        python = self.normalized("python", program)
        self.assertTrue(python, "the program made no access: nothing compared")
        self.assertEqual(self.normalized("native", program), python)

    def test_views_and_strides(self):
        self.check(lambda: (self.m[:, 1:4].sum(), self.m.t().contiguous(), self.m[1::2, ::3] * 2,
                            self.v[2:].expand(3, 4).sum(), self.m.permute(1, 0)[2:] + 1))

    def test_in_place_on_views(self):
        self.check(lambda: (self.m[:, :3].mul_(2), self.m[2:5].add_(self.v), self.m.t()[1].zero_()))

    def test_out_arguments(self):
        self.check(lambda: (torch.add(self.m, self.v, out=self.out), torch.mm(self.m, self.m.t()[:6, :6][:, :6].t(),
                                                                               out=self.out[:, :6].contiguous())))

    def test_foreach_lists(self):
        self.check(lambda: (torch._foreach_add_(self.xs, self.ys), torch._foreach_mul(self.xs, 2.0),
                            torch._foreach_add(self.xs, self.ys)))

    def test_a_training_step_with_backward(self):
        model = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

        def step():
            opt.zero_grad()
            loss = model(self.m).square().mean()
            loss.backward()
            opt.step()
        self.known += list(model.parameters())
        step()  # momentum buffers exist before the compared steps
        python = self.normalized("python", step)
        self.assertEqual(self.normalized("native", step), python)
        self.assertGreater(len(python), 30)


if __name__ == "__main__":
    unittest.main()
