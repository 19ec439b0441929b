"""Every rejected construct raises a KernelError naming the kernel, rejects.py and the exact line, and
quoting the source (the snippets are in rejects.py, each offending line marked `# E <name>`)."""

from __future__ import annotations

import pathlib
import re

import numpy as np
import pytest

import vyre
from vyre import In, Out, f32, i32, tid
from vyre.errors import KernelError, ValidationError

from . import rejects

_TEXT = pathlib.Path(rejects.__file__).read_text().splitlines()
MARKED = {m.group(1): (k + 1, line.split("#")[0].strip())
          for k, line in enumerate(_TEXT) if (m := re.search(r"# E (\w+)$", line))}
# the kernel whose translation fails, for the snippets whose error sits in a helper
KERNEL_OF = {"recursion": "recursion", "helper_error": "helper_error"}
ARGS = (np.zeros(8, np.float32), np.zeros(8, np.int32), np.zeros(8, np.uint32), 5)


@pytest.mark.parametrize("name", sorted(MARKED))
def test_rejection_names_the_line(name):
    line, text = MARKED[name]
    fn = getattr(rejects, KERNEL_OF.get(name, name))
    with pytest.raises(KernelError) as info:
        vyre.kernel(fn).program(*ARGS, dim=8)
    err = info.value
    assert err.filename == "rejects.py" and err.line == line, str(err)
    assert err.kernel == fn.__name__
    assert err.segment and err.segment in " ".join(text.split()), (err.segment, text)
    assert str(err).startswith(f"kernel {fn.__name__}, rejects.py:{line}: `{err.segment}`: ")
    assert "\nFix: " in str(err) and err.fix
    assert isinstance(err, ValidationError) and err.code == "VYRE-E102"


def test_enough_snippets():
    assert len(MARKED) >= 20


def test_messages_say_what_to_write():
    with pytest.raises(KernelError, match=r"write a // b for integer division, or f32\(a\) / b"):
        vyre.kernel(rejects.int_division).program(*ARGS, dim=8)
    with pytest.raises(KernelError, match=r"different types: f32 and i32"):
        vyre.kernel(rejects.mixed_types).program(*ARGS, dim=8)
    with pytest.raises(KernelError, match=r"first assigned on line \d+"):
        vyre.kernel(rejects.retyped_local).program(*ARGS, dim=8)


def test_builder_errors_are_chained():
    with pytest.raises(KernelError) as info:
        vyre.kernel(rejects.divergent_barrier).program(*ARGS, dim=8)
    assert isinstance(info.value.__cause__, ValidationError)
    assert "barrier-uniformity" in [i.rule for i in info.value.issues]


def test_intrinsics_outside_a_kernel_raise():
    with pytest.raises(KernelError, match="only has a meaning inside"):
        vyre.tid()
    with pytest.raises(KernelError, match="only has a meaning inside"):
        vyre.f32(3)


@pytest.mark.parametrize("name,shown", [("global_array", r"'WEIGHTS' is an array \(ndarray of shape \(8,\), "
                                         r"float32\)"),
                                        ("global_array_call", r"'GRID' is an array \(ndarray of shape \(2, 4\), "
                                         r"int32\)"),
                                        ("global_array_in_math", r"'WEIGHTS' is an array")])
def test_module_level_array_is_a_kernel_error(name, shown):
    # issue 27: `obj in (int, float, bool)` compared a numpy array elementwise (ValueError: truth value ...
    # ambiguous), naming no kernel, file or line
    with pytest.raises(KernelError, match=shown) as info:
        vyre.kernel(getattr(rejects, name)).program(*ARGS, dim=8)
    err = info.value
    assert err.kernel == name and err.filename == "rejects.py" and err.line == MARKED[name][0]
    assert "pass it as a parameter" in err.fix
    want = "GRID: In[i32]" if "GRID" in str(err) else "WEIGHTS: In[f32]"
    assert want in err.fix


def test_countdown_range_hint_casts_the_u32_bound():
    # issue 27: the hint said "e.g. f32(-1)"; what works is a signed loop
    with pytest.raises(KernelError) as info:
        vyre.kernel(rejects.countdown_range).program(*ARGS, dim=8)
    assert "a u32 loop variable cannot count below 0" in info.value.message
    assert "range(i32(len(x)) - 1, -1, -1)" in info.value.fix and "f32" not in info.value.fix
    with pytest.raises(KernelError) as info:
        vyre.kernel(rejects.countdown_range_shape).program(*ARGS, dim=8)
    assert "range(i32(x.shape[0]), -2, -2)" in info.value.fix
    with pytest.raises(KernelError) as info:
        vyre.kernel(rejects.negative_with_u32).program(*ARGS, dim=8)
    assert "-1 does not fit in u32" in info.value.message
    assert "i32(len(x)) - 1" in info.value.fix and "f32(-1)" not in info.value.fix


def test_the_countdown_hint_runs(reference):
    @vyre.kernel
    def reverse(x: In[f32], y: Out[f32]):
        if tid() == 0:
            j = 0
            for i in range(i32(len(x)) - 1, -1, -1):
                y[j] = x[i]
                j += 1

    x = np.arange(5, dtype=np.float32)
    (y,) = reverse[1](x, np.zeros(5, np.float32), backend=reference)
    assert np.array_equal(y, x[::-1])
