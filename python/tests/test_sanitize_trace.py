"""The sanitizer's reports, driven by a fake trace: the test calls the trace callbacks itself
with made-up stream and event ids, and runs CPU ops on fake streams (Session._on_stream), so
the dispatch mode, the byte ranges, the lifetimes and the fix text are the real ones."""

import inspect
import os
import subprocess
import sys
import textwrap
import unittest

import torch_or_skip  # noqa: F401
import torch

import streamsafe.torch as sst
from tiers import TIERS, skip_unless_built

COMPUTE, SIDE = 101, 202
EVENT = 7
HERE = os.path.basename(__file__)


def line_after(offset=1):
    """The line `offset` lines below the caller's."""
    return inspect.currentframe().f_back.f_lineno + offset


def new_session(tier):
    context = sst.sanitize(tier=tier)
    session = context.__enter__()
    session.name_stream(COMPUTE, "compute")
    session.name_stream(SIDE, "side")
    return context, session


class FakeTraceTest(unittest.TestCase):
    """Under the Python tier; NativeFakeTraceTest runs the same cases under the native one."""

    TIER = "python"

    def setUp(self):
        skip_unless_built(self, self.TIER)
        self.context, self.s = new_session(self.TIER)
        self.assertEqual(self.s.tier, self.TIER)

    def tearDown(self):
        self.context.__exit__(None, None, None)

    def on(self, stream):
        return self.s._on_stream(stream)

    def test_missing_wait_names_both_lines_and_the_fix(self):
        x = torch.zeros(256)
        with self.on(COMPUTE):
            write_line = line_after()
            x.mul_(3)
        with self.on(SIDE):
            read_line = line_after()
            y = x[64:128] + 1  # noqa: F841
        (h,) = self.s.hazards
        self.assertEqual(h.kind, "race")
        self.assertEqual((h.first.op, h.first.stream, h.first.loc), ("aten::mul_", "compute", f"{HERE}:{write_line}"))
        self.assertEqual((h.second.op, h.second.stream, h.second.loc), ("aten::add", "side", f"{HERE}:{read_line}"))
        self.assertIn("`side.wait_event(ev)` with `ev` recorded on `compute`", h.fix)
        self.assertIn(f"`side.wait_stream(compute)`, before line {HERE}:{read_line}", h.fix)

    def test_wait_event_orders_the_consumer(self):
        x = torch.zeros(256)
        with self.on(COMPUTE):
            x.mul_(3)
        self.s.on_event_record(EVENT, COMPUTE)
        self.s.on_event_wait(EVENT, SIDE)
        with self.on(SIDE):
            x.add_(1)
        self.assertEqual(self.s.hazards, [])

    def test_disjoint_slices_on_two_streams_do_not_race(self):
        x = torch.zeros(8, 8)
        with self.on(COMPUTE):
            x[:, :4].fill_(1)
        with self.on(SIDE):
            x[:, 4:].fill_(2)
        self.assertEqual(self.s.hazards, [])

    def test_reads_on_two_streams_do_not_race(self):
        x, out = torch.ones(64), torch.empty(64)
        with self.on(COMPUTE):
            x.sum()
        with self.on(SIDE):
            torch.neg(x, out=out)
        self.assertEqual(self.s.hazards, [])

    def old_lifetime_used_on_side(self, record):
        """x's first lifetime: allocated and written on compute, read on side, freed."""
        x = torch.empty(256)
        with self.on(COMPUTE):
            self.s.on_memory_allocation(x.data_ptr())
            x.fill_(1)
        self.s.on_event_record(EVENT, COMPUTE)
        self.s.on_event_wait(EVENT, SIDE)
        with self.on(SIDE):
            last_use = line_after()
            x.sum()
        if record:
            self.s.record_stream(x, SIDE)
        self.s.on_memory_deallocation(x.data_ptr())
        return x, last_use

    def test_missing_record_stream_then_reuse_is_reported(self):
        x, last_use = self.old_lifetime_used_on_side(record=False)
        with self.on(COMPUTE):
            self.s.on_memory_allocation(x.data_ptr())
            x.fill_(2)
        (h,) = self.s.hazards
        self.assertEqual(h.kind, "reuse_race")
        self.assertEqual((h.first.stream, h.first.loc), ("side", f"{HERE}:{last_use}"))
        self.assertIn(f"`x.record_stream(side)` after its last use on `side`, line {HERE}:{last_use}", h.fix)

    def test_record_stream_makes_the_reuse_safe(self):
        x, _ = self.old_lifetime_used_on_side(record=True)
        with self.on(COMPUTE):
            self.s.on_memory_allocation(x.data_ptr())
            x.fill_(2)
        self.assertEqual(self.s.hazards, [])

    def test_fresh_allocation_used_on_another_stream_without_a_wait(self):
        x = torch.empty(256)
        with self.on(COMPUTE):
            self.s.on_memory_allocation(x.data_ptr())
            x.fill_(1)
        self.s.on_memory_deallocation(x.data_ptr())
        with self.on(COMPUTE):
            self.s.on_memory_allocation(x.data_ptr())
        with self.on(SIDE):
            use = line_after()
            x.fill_(2)
        (h,) = self.s.hazards
        self.assertEqual(h.kind, "reuse_race")
        self.assertIn(f"`side.wait_stream(compute)` before line {HERE}:{use}", h.fix)

    def test_host_read_of_a_device_to_host_copy_before_sync(self):
        pinned, device = torch.empty(64), torch.ones(64)
        with self.on(COMPUTE):
            pinned.copy_(device, non_blocking=True)
        read = line_after()
        pinned.sum()
        (h,) = self.s.hazards
        self.assertEqual((h.kind, h.second.stream, h.second.loc), ("host_race", "host", f"{HERE}:{read}"))
        self.assertIn(f"or `compute.synchronize()`, before line {HERE}:{read}", h.fix)

    def test_host_read_after_stream_sync_is_fine(self):
        pinned, device = torch.empty(64), torch.ones(64)
        with self.on(COMPUTE):
            pinned.copy_(device, non_blocking=True)
        self.s.on_stream_synchronization(COMPUTE)
        pinned.sum()
        self.assertEqual(self.s.hazards, [])

    def test_pinned_buffer_refilled_during_its_upload(self):
        pinned, device = torch.ones(64), torch.empty(64)
        with self.on(COMPUTE):
            device.copy_(pinned, non_blocking=True)
        pinned.fill_(5)
        self.assertEqual([h.kind for h in self.s.hazards], ["host_race"])

    def test_trace_sync_made_inside_an_op_follows_the_op(self):
        pinned, device = torch.empty(64), torch.ones(64)
        self.s._in_op = True  # a blocking copy syncs from inside the op
        self.s.on_stream_synchronization(COMPUTE)
        self.s._in_op = False
        with self.on(COMPUTE):
            pinned.copy_(device)
        pinned.sum()
        self.assertEqual(self.s.hazards, [])

    def test_annotate_declares_a_custom_kernel(self):
        x = torch.zeros(32)
        sst.annotate(writes=[x], stream=COMPUTE, name="my_kernel")
        with self.on(SIDE):
            x.sum()
        (h,) = self.s.hazards
        self.assertEqual((h.kind, h.first.op, h.first.stream), ("race", "my_kernel", "compute"))

    def test_one_report_per_pair_of_call_sites(self):
        x = torch.zeros(16)
        for _ in range(3):
            with self.on(COMPUTE):
                x.mul_(2)
            with self.on(SIDE):
                x.sum()
        # The read after each write, and each later write after the read: two bugs, each once.
        found = {(h.first.op, h.second.op): h.count for h in self.s.hazards}
        self.assertEqual(found, {("aten::mul_", "aten::sum"): 3, ("aten::sum", "aten::mul_"): 2})


class NativeFakeTraceTest(FakeTraceTest):
    TIER = "native"


class TierChoiceTest(unittest.TestCase):
    def test_auto_picks_native_when_built_and_python_to_raise(self):
        with sst.sanitize() as s:
            self.assertEqual(s.tier, TIERS[-1])
        with sst.sanitize(mode="raise") as s:
            self.assertEqual(s.tier, "python")

    def test_native_tier_does_not_raise(self):
        with self.assertRaises(ValueError):
            with sst.sanitize(mode="raise", tier="native"):
                pass
        with self.assertRaises(ValueError):
            with sst.sanitize(tier="fast"):
                pass
        self.assertIsNone(sst.active_session())


class RaiseModeTest(unittest.TestCase):
    def test_raise_stops_at_the_first_hazard(self):
        x = torch.zeros(16)
        with self.assertRaises(sst.HazardError) as caught:
            with sst.sanitize(mode="raise") as s:
                with s._on_stream(COMPUTE):
                    x.mul_(2)
                with s._on_stream(SIDE):
                    x.sum()
                self.fail("no HazardError at the racing op")
        self.assertEqual(caught.exception.hazard.kind, "race")

    def test_sessions_do_not_nest_and_end_cleanly(self):
        with sst.sanitize():
            with self.assertRaises(RuntimeError):
                with sst.sanitize():
                    pass
        self.assertIsNone(sst.active_session())


class EnvironmentTest(unittest.TestCase):
    def test_environment_variable_prints_the_reports_at_exit(self):
        for tier in TIERS:
            with self.subTest(tier=tier):
                self.check_environment(tier)

    def check_environment(self, tier):
        program = textwrap.dedent("""
            import torch, streamsafe.torch
            s = streamsafe.torch.active_session()
            x = torch.zeros(8)
            with s._on_stream(1):
                x.mul_(2)
            with s._on_stream(2):
                x.sum()
        """)
        env = dict(os.environ, STREAMSAFE_TORCH_SANITIZER="1", STREAMSAFE_TORCH_SANITIZER_TIER=tier)
        done = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=300)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("streamsafe: race: `aten::mul_`", done.stderr)
        self.assertIn("streamsafe: 1 hazard(s)", done.stderr)


if __name__ == "__main__":
    unittest.main()
