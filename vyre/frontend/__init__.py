"""``@vyre.kernel``: write a kernel as a typed Python function, launch it over the shape of the work.

Example::

    import vyre
    from vyre import In, InOut, f32, tid

    @vyre.kernel
    def saxpy(x: In[f32], y: InOut[f32], a: f32):
        i = tid()
        y[i] = a * x[i] + y[i]

    (y2,) = saxpy[n](x, y, 2.0)                      # or saxpy.launch(dim=n, inputs=[x, y, 2.0])
    prog = saxpy.program(x, y, 2.0, dim=n)           # the vyre Program; saxpy.wgsl(...) its WGSL

The body is never executed: its source is read (``inspect.getsource`` + ``ast``) and translated to
:class:`vyre.ProgramBuilder` calls, so every kernel is a validated, fingerprinted Program that runs on
every backend. What is accepted, precisely:

**Parameters** (every one annotated, positional, no defaults/``*args``/``**kwargs``):
``In[dt]`` (read), ``Out[dt]`` (written; its contents are not uploaded), ``InOut[dt]`` (read and
written) arrays, and scalars ``f32``, ``f16``, ``i32``, ``u32``, ``bool_`` passed as Python numbers
(packed, with the launch dims, into one u32 uniform: f32/i32 by their bits, f16 through f32, bool as
0/1). An array's number of dimensions (1-3) comes from the numpy array passed: ``img[y, x]`` indexes
row-major; ``x.shape[k]`` and ``len(x)`` (= ``x.shape[0]``) work in the body. The first dimension is
runtime-sized (a launch over another length reuses the program); the trailing ones are baked into
the program (part of the cache key).

**Launch**: ``k.launch(dim, inputs, backend=None)`` or ``k[dim](*args, backend=None)`` (or keyword
arguments by parameter name). ``dim`` is an int or a tuple of 1-3 ints, each >= 1 (0 or a negative
number is an InvalidArgumentError, a float an ArgumentTypeError, before any GPU work; like every bad
launch argument, a DispatchError that is also a ValueError or TypeError). vyre picks the workgroup
size (256; (16, 16); (8, 8, 4); override with ``@vyre.kernel(workgroup_size=...)``) and the grid, and
starts the kernel with ``if any tid >= dim: return``, so exactly the points of ``dim`` run. Exception:
a kernel that calls ``vyre.barrier()`` gets no such return (every invocation of a workgroup must reach
a barrier), so
threads beyond ``dim`` run too: guard their loads and stores yourself (``if i < n:``). The result is
what ``backend.dispatch`` returns (one array per Out/InOut parameter, in order, shaped like the
argument), and writeable numpy arguments for Out/InOut parameters are filled in place (strided views
such as ``big[::2]`` too: the results are written through the view). ``backend`` is None or a backend
object (a string is an ArgumentTypeError).
Arrays may be resident: ResidentHandles (``h``: 1-D, ``nbytes // itemsize`` elements, or ``(h, shape)``)
or ``vyre.Array`` objects (vyre.array, or any class with the members of
:class:`vyre.frontend.resident.ResidentArray`; dtype and shape are the Array's; a pending expression is
evaluated first; its buffer is bound, no host copy). Then every array argument must be resident (a numpy array
among them is a DispatchError: upload it with ``vyre.array.asarray(x)``), the kernel runs by
``backend.dispatch_resident`` and launch returns None: ``Out``/``InOut`` Arrays are written in place
(an Array whose buffer pending expressions still read moves to a copy first, so they see the old
values). ``backend`` defaults to the Arrays' backend (another one is a DeviceMismatchError), else
:func:`vyre.default_backend`. Programs are cached per (source, parameter
dtypes, ndims and trailing shapes, launch rank, workgroup size): ``k.cache_info()`` counts builds.

**Thread ids**: ``tid()`` is the flat (row-major) index of the launch point; ``tid(axis)`` its index
along ``axis``, where for ``dim=(h, w)`` axis 0 runs over h (rows) and axis 1 over w (columns):
``y, x = tid(0), tid(1)`` or ``y, x = vyre.tid2()`` (``tid3()`` in 3-D). ``local_id()`` (flat) /
``local_id(axis)`` and ``group_id(axis)`` (``group_id()`` in 1-D) use the same axes. All are u32.

**Statements**: ``name = expr`` (a local's type is fixed by its first assignment or by an annotation
``acc: f32 = 0``; assigning another type later is an error); ``a, b = c, d`` (all of the right side is
evaluated first) and ``y, x = vyre.tid2()``; ``x[i] = v``, ``img[y, x] = v``; augmented assignment
``+= -= *= /= //= %= **= &= |= ^= <<= >>=`` on names and array elements (the index is evaluated once);
``if/elif/else``; ``for i in range(stop)``, ``range(start, stop)``, ``range(start, stop, step)`` with a
constant non-zero step (the bounds are evaluated once; the loop variable cannot be assigned);
``while``; ``break``; ``continue``; ``return`` (no value); ``pass``; docstrings; calls as statements
(atomics, ``barrier()``, helpers). A name first assigned inside a block is not defined after it
(assign it before the block). Scalar parameters cannot be assigned (copy them first).

**Expressions**: int/float/bool literals and module-level (or closure) int/float/bool constants,
inlined; ``+ - *`` ; ``/`` on floats only (two integers: an error: write ``a // b`` or ``f32(a) / b``);
``//`` and ``%`` with Python's semantics (floor division, remainder with the divisor's sign; plain
WGSL ``/``/``%`` on u32; exact on i32 and floats); ``x ** n`` with a constant integer ``|n| <= 16``
expands to multiplications, other ``**`` needs floats (``pow``); ``& | ^ ~ << >>`` on integers (the
shift amount is converted to u32; ``& | ^`` on bools are logical); comparisons with Python precedence,
chained (``0 <= i < n``, the middle evaluated once); ``and``/``or``/``not`` on bools only (both sides of
``and``/``or`` are evaluated); ``a if c else b`` (a select, both sides evaluated, which is safe: an out
of range load yields a value, not a fault; when a side calls an atomic or a helper it becomes an
if/else, so only the taken side runs); unary ``-`` and ``+``; ``min(a, b, ...)``, ``max``, ``abs``,
``len(x)``, ``x.shape[k]``; casts ``f32(v)``, ``i32``, ``u32``, ``f16``, ``bool_`` (float -> int
truncates toward zero and saturates; ``bool_(x)`` is ``x != 0``); ``vyre.sqrt rsqrt exp exp2 log log2
sin cos tan tanh floor ceil round trunc fract sign popcount reverse_bits clz ctz`` and ``math.sqrt exp
log log2 sin cos tan tanh floor ceil trunc fabs`` (``math.floor`` gives a float here),
``vyre.pow(a, b)``, ``vyre.fma(a, b, c)``, ``vyre.select(c, a, b)``, ``vyre.bitcast(x, u32)``.

**Types**: no silent promotion: mixing two typed values of different types (``i + x`` with u32 ``i``
and f32 ``x``, or u32 with i32) is an error with a Fix (cast one). A Python literal takes the other
operand's type (``i + 1`` is u32 for u32 ``i``; ``x * 2`` is f32 for f32 ``x``); a float literal with
an integer operand is an error. A literal alone defaults to i32 (ints), f32 (floats) or bool, so
``for j in range(10)`` counts in i32 (write ``range(u32(10))`` to index with u32; count down to 0 with
``range(i32(len(x)) - 1, -1, -1)``: a u32 loop cannot reach -1). Integer arithmetic
wraps; integer division or remainder by zero gives vyre's value (``x / 0 = x``, ``x % 0 = 0``), not an
exception. Array indices may be u32 or i32; an out-of-range load yields 0 on the reference backend
and an unspecified in-range value on a GPU, an out-of-range store is dropped.

**Atomics and workgroup memory**: ``vyre.atomic_add(arr, i, v)`` and ``atomic_sub min max and or xor
exchange`` (``atomic_load(arr, i)``, ``atomic_cas(arr, i, expected, v)``) on u32/i32 InOut arrays or
workgroup arrays return the old value (dropped when used as a statement); ``tile = vyre.shared(f32,
256)`` declares a workgroup array (top level of the kernel, constant count); ``vyre.barrier()``.

**Helpers**: ``@vyre.func`` functions are inlined at each call; parameters typed by their annotations
(dtype marker or In/InOut[...]) or by the arguments; ``return value`` only as the last statement.

**Names** resolve through the function's closure, globals and builtins: vyre's functions may be
written ``vyre.X``, imported (``from vyre import X``) or aliased. Rejected, with a KernelError naming the
kernel, file, line and source text: any other call or object (closures over lists, numpy functions, a
module-level numpy array: pass it as a parameter),
recursion, lambdas, comprehensions, strings, f-strings, lists/dicts, slices, ``try``/``with``/
``global``/``nonlocal``/``del``/``assert``/``raise``/``import``/nested ``def``, ``for``/``while ... else``,
keyword arguments, ``*args``, default arguments, chained assignment ``a = b = c``.
"""

from __future__ import annotations

from .decorator import Kernel, kernel
from .funcs import Func, func
from .intrinsics import *  # noqa: F403 - the kernel intrinsics (tid, sqrt, atomic_add, ...)
from .intrinsics import NAMES as INTRINSICS
from .types import ArrayType, DType, In, InOut, Out, bool_, f16, f32, i32, u32

__all__ = ["Kernel", "kernel", "Func", "func", "In", "Out", "InOut", "ArrayType", "DType", "f32", "f16", "i32",
           "u32", "bool_", "INTRINSICS", *INTRINSICS]
