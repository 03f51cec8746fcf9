"""The fix for a finding, in PyTorch terms. Streams are named as the sanitizer knows them
(`name_stream`, else s1, s2, ... in order of first use; `default` for the null stream)."""


def _op(ref):
    return f"`{ref['op']}` ({ref['loc']})"


def _race(h):
    first, second = h["first"], h["second"]
    producer, consumer = first["stream"], second["stream"]
    return (f"`{consumer}.wait_event(ev)` with `ev` recorded on `{producer}` after {_op(first)}, "
            f"or `{consumer}.wait_stream({producer})`, before line {second['loc']}")


def _host_race(h):
    first, second = h["first"], h["second"]
    if second["stream"] == "host":
        producer, late = first, second
    else:
        producer, late = second, first
    return (f"`ev.synchronize()` with `ev` recorded on `{producer['stream']}` after {_op(producer)}, "
            f"or `{producer['stream']}.synchronize()`, before line {late['loc']}")


def _reuse_race(h):
    first, second, alloc = h["first"], h["second"], h["alloc"]
    if alloc["op"]:
        return (f"`{second['stream']}.wait_stream({alloc['stream']})` before line {second['loc']} "
                f"(the tensor was allocated on `{alloc['stream']}` by {_op(alloc)}), or allocate "
                f"it on `{second['stream']}`")
    return (f"`x.record_stream({first['stream']})` after its last use on `{first['stream']}`, "
            f"line {first['loc']} (x: the tensor {_op(first)} used, freed at {h['free']['loc']})")


def _use_after_free(h):
    return (f"use the tensor before it is freed ({h['free']['loc']}): {_op(h['second'])} touches "
            f"it after the free")


_BY_KIND = {"race": _race, "host_race": _host_race, "reuse_race": _reuse_race,
            "use_after_free": _use_after_free}


def fix_text(h):
    """One sentence saying what to add and where; the engine's own wording for other kinds."""
    make = _BY_KIND.get(h["kind"])
    return make(h) if make else h["engine_fix"]
