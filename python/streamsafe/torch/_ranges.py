"""The bytes a tensor touches, from its storage offset, sizes, strides and element size.

A tensor's elements lie at data_ptr + elem * sum(i_k * stride_k). The dims whose strides make one
contiguous run (innermost first: stride equal to the run so far) are folded into a run length;
the other dims enumerate run starts. Up to MAX_RUNS runs are returned exactly (a column slice of
a matrix is its rows' pieces, so two streams writing disjoint columns do not race); beyond that
the minimal covering interval stands for them (more bytes than touched: a possible false race,
never a missed one). Expanded dims (stride 0) touch no new bytes and are dropped.
"""

import itertools

MAX_RUNS = 64


def _layout(tensor):
    """(element size, [(size, stride)] of the dims that move, outermost first) or None if empty."""
    dims = []
    for size, stride in zip(tensor.shape, tensor.stride()):
        if size == 0:
            return None
        if size > 1 and stride != 0:
            dims.append((size, stride))
    return tensor.element_size(), dims


def _split_run(dims):
    """Folds the innermost dims that extend one contiguous run; returns (run, outer dims)."""
    run = 1
    outer = sorted(dims, key=lambda d: d[1], reverse=True)
    while outer and outer[-1][1] == run:
        size, _ = outer.pop()
        run *= size
    return run, outer


def _merge(starts, run):
    """Sorted, overlapping or adjacent runs of `run` elements as (first, count) element spans."""
    spans = []
    for start in sorted(starts):
        if spans and start <= spans[-1][0] + spans[-1][1]:
            first, count = spans[-1]
            spans[-1] = (first, max(count, start + run - first))
        else:
            spans.append((start, run))
    return spans


def byte_ranges(tensor):
    """[(ptr, bytes)] covering exactly what `tensor` may touch (see the module comment)."""
    if tensor.is_contiguous():
        nbytes = tensor.numel() * tensor.element_size()
        return [(tensor.data_ptr(), nbytes)] if nbytes else []
    layout = _layout(tensor)
    if layout is None:
        return []
    elem, dims = layout
    base = tensor.data_ptr()
    run, outer = _split_run(dims)
    runs = 1
    for size, _ in outer:
        runs *= size
    if runs > MAX_RUNS:
        extent = sum((size - 1) * stride for size, stride in dims)
        return [(base, (extent + 1) * elem)]
    starts = [sum(i * stride for i, (_, stride) in zip(index, outer))
              for index in itertools.product(*(range(size) for size, _ in outer))]
    return [(base + first * elem, count * elem) for first, count in _merge(starts, run)]


def storage_base(tensor):
    """The first byte of the storage behind `tensor`, without making a storage object."""
    return tensor.data_ptr() - tensor.storage_offset() * tensor.element_size()


def storage_of(tensor):
    """(base ptr, bytes) of the storage behind `tensor` (the allocation the allocator made)."""
    storage = tensor.untyped_storage() if hasattr(tensor, "untyped_storage") else tensor.storage()
    return storage.data_ptr(), storage.nbytes()
