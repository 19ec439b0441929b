"""``vyre.array``: device arrays following the Python array API standard (revision 2024.12), with lazy
fusion of elementwise work. ``vyre.array_api`` is an alias of this module (the canonical name is
``vyre.array``); ``x.__array_namespace__()`` returns it.

Layout: one module per section of the standard -- _creation, _dtypes (data types and their functions,
astype included), _elementwise, _indexing, _linalg (with the ``linalg`` extension, whose namespace is
vyre/array/linalg.py), _manipulation, _searching (where included), _sets, _sorting, _statistical,
_utility, _inspection (``__array_namespace_info__``) -- plus the array object (_array: storage and
attributes; _operators: its operators bound to those functions), the views the manipulation and
indexing functions share (_views), the backend of new arrays (_device: ``use``), wgpu interop
(_interop), and the hook a gradient tape records through (_record: every public function, operator and
method goes through one wrapper, a test of an empty list when no tape records; vyre.autograd is the
recorder, and this package never imports it). Everything that builds or runs programs is
in vyre/array/_kernels (expression nodes and their IR, fusion and evaluation, the program-cache
registry, one module per kernel family). complex64/complex128 arrays hold (re, im) pairs (_complex).
Gaps: DLPack through host copies only.

Extending (the contract of the function families built on this core):

* a new elementwise op: an IR emitter in ``_kernels.emit.OPS[name]`` (``(b, args, arg_dtypes, out_dtype)
  -> Val``) and a public function calling ``_elementwise.apply(name, [x1, x2], accept=..., out=...)``;
* a view (expand_dims, squeeze, flip, slicing): ``Array(shape, x.dtype, x.device, Strided(x._node(), shape,
  offset, strides))`` (see _views.permute_dims), or a new :class:`_kernels.nodes.View` subclass;
* a kernel that consumes arrays (reduction, matmul, sort): fuse a pending input with
  ``e = _kernels.emit.Emitter(builder, x._node())`` (its buffers are declared first; ``e.value(i)`` is
  element i), cache your program in a registered family (``_kernels.cache.register(name, capacity,
  Program).get(("yours", _kernels.nodes.collect(node).key, ...), build)``), then ``p =
  _kernels.fused.plan_for_node(node, x.device)`` (cut-out subtrees), ``p.steps.append((program,
  [*p.bind(e), *your_handles], grid))``, ``p.run()``: one submission. Inputs you only read: ``x.handle``
  (evaluates). Results: ``Array(shape, dtype, device)`` then ``._allocate()`` for its handle
  (zero-filled);
* an op-library Pipeline on arrays: ``run_pipeline_on(pipeline, arrays) -> list[Array]``.
"""

from __future__ import annotations

from . import (
               _complex,
               _complex_reduce,  # noqa: F401 - registers the complex forms of sum, prod, mean, matmul, vecdot
               _creation,
               _dtypes,
               _elementwise,
               _indexing,
               _interop,
               _linalg,
               _manipulation,
               _operators,  # binds Array's operators and methods
               _protocols,  # binds pickling, copying, iteration and numpy's protocols
               _record,
               _searching,
               _sets,
               _sorting,
               _statistical,
               _utility,
               fft,  # the FFT extension's namespace
               linalg,  # noqa: E402 - the extension's namespace (after the star imports: a name of its own)
)
from ._array import Array
from ._complex import *  # noqa: F403
from ._creation import *  # noqa: F403
from ._device import current_backend, use
from ._dtypes import *  # noqa: F403
from ._elementwise import *  # noqa: F403
from ._export_view import program_of
from ._indexing import *  # noqa: F403
from ._inspection import __array_namespace_info__
from ._interop import *  # noqa: F403
from ._kernels.fused import evaluate, fusion_stats, reset_fusion_stats
from ._kernels.pipeline import run_pipeline_on
from ._linalg import *  # noqa: F403
from ._manipulation import *  # noqa: F403
from ._searching import *  # noqa: F403
from ._sets import *  # noqa: F403
from ._sorting import *  # noqa: F403
from ._statistical import *  # noqa: F403
from ._utility import *  # noqa: F403

__array_api_version__ = "2024.12"

e = 2.718281828459045
pi = 3.141592653589793
inf = float("inf")
nan = float("nan")
newaxis = None

__all__ = ["Array", "__array_api_version__", "__array_namespace_info__", "use", "current_backend",
           "run_pipeline_on", "program_of", "evaluate", "fusion_stats", "reset_fusion_stats", "e", "pi", "inf",
           "nan", "newaxis",
           "fft", "linalg", *_complex.__all__, *_creation.__all__, *_dtypes.__all__, *_elementwise.__all__,
           *_indexing.__all__,
           *_interop.__all__, *_linalg.__all__, *_manipulation.__all__, *_searching.__all__, *_sets.__all__,
           *_sorting.__all__, *_statistical.__all__, *_utility.__all__]

# the autograd hook (vyre/array/_record.py): operators and public functions go through its wrapper
_operators.bind(_record.recorded)
_record.install(globals(), [linalg, fft], _protocols._UFUNCS)
