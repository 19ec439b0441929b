"""``vyre.array``: device arrays following the Python array API standard (revision 2024.12), with lazy
fusion of elementwise work. ``vyre.array_api`` is an alias of this module (the canonical name is
``vyre.array``); ``x.__array_namespace__()`` returns it.

Layout (one idea per module): _dtypes (dtypes, promotion, finfo/iinfo/result_type/can_cast/isdtype),
_device (``use``, the default backend, the device check), _array (the Array class), _expr (lazy node types
and the emitter), _fuse (program generation, cache, evaluation, fusion stats), _elementwise (recording
ops and their IR), _math (IR for the math the IR lacks), _functions (the standard's elementwise functions,
astype, where, clip), _creation, _views (broadcast_to, reshape, permute_dims), _pipeline
(``run_pipeline_on``); the function families: _creation_grid (meshgrid, tril, triu), _utility (all, any,
diff, broadcast_shapes), _sets (unique_*), _info (``__array_namespace_info__``), and the ``linalg``
extension (vyre/array/linalg.py). Gaps: no 64-bit dtypes, no complex (so no conj/real/imag), no DLPack.

Extending (the contract of the function families built on this core):

* a new elementwise op: an IR emitter in ``_expr.OPS[name]`` (``(b, args, arg_dtypes, out_dtype) -> Val``)
  and a public function calling ``_elementwise.apply(name, [x1, x2], accept=..., out=...)``;
* a view (expand_dims, squeeze, flip, slicing): ``Array(shape, x.dtype, x.device, Strided(x._node(), shape,
  offset, strides))`` (see _views.permute_dims), or a new :class:`_expr.View` subclass;
* a kernel that consumes arrays (reduction, matmul, sort): fuse a pending input with
  ``e = _expr.Emitter(builder, x._node())`` (its buffers are declared first; ``e.value(i)`` is element i),
  cache your program by ``("yours", _expr.collect(node).key, ...)``, then ``p = _fuse.plan_for_node(node,
  x.device)`` (cut-out subtrees), ``p.steps.append((program, [*p.bind(e), *your_handles], grid))``,
  ``p.run()``: one submission. Inputs you only read: ``x.handle`` (evaluates). Results: ``Array(shape,
  dtype, device)`` then ``._allocate()`` for its handle (zero-filled);
* an op-library Pipeline on arrays: ``run_pipeline_on(pipeline, arrays) -> list[Array]``.
"""

from __future__ import annotations

# the function families (each module's __all__; one import line per family)
from . import _creation_grid, _indexing, _interop, _linalg, _manip, _search, _sets, _stats, _utility, linalg
from ._array import Array
from ._creation import (
                        arange,
                        asarray,
                        empty,
                        empty_like,
                        eye,
                        full,
                        full_like,
                        linspace,
                        ones,
                        ones_like,
                        zeros,
                        zeros_like,
)
from ._creation_grid import *  # noqa: F403
from ._device import current_backend, use
from ._dtypes import bool, can_cast, finfo, float16, float32, iinfo, int32, isdtype, result_type, uint32  # noqa: A004
from ._functions import *  # noqa: F403 - the standard's elementwise functions
from ._functions import __all__ as _elementwise_all
from ._fuse import evaluate, fusion_stats, reset_fusion_stats
from ._indexing import *  # noqa: F403
from ._info import __array_namespace_info__
from ._interop import *  # noqa: F403
from ._linalg import *  # noqa: F403
from ._manip import *  # noqa: F403
from ._pipeline import run_pipeline_on
from ._search import *  # noqa: F403
from ._sets import *  # noqa: F403
from ._stats import *  # noqa: F403
from ._utility import *  # noqa: F403
from ._views import broadcast_to, permute_dims, reshape

__array_api_version__ = "2024.12"

e = 2.718281828459045
pi = 3.141592653589793
inf = float("inf")
nan = float("nan")
newaxis = None

__all__ = ["Array", "__array_api_version__", "__array_namespace_info__", "use", "current_backend", "asarray",
           "zeros", "ones", "empty", "full", "arange", "linspace", "eye", "zeros_like", "ones_like", "full_like",
           "empty_like", "bool", "int32", "uint32", "float32", "float16", "result_type", "can_cast", "isdtype", "finfo",
           "iinfo", *_elementwise_all, "broadcast_to", "reshape", "permute_dims", "run_pipeline_on", "evaluate",
           "fusion_stats", "reset_fusion_stats", "e", "pi", "inf", "nan", "newaxis", "linalg",
           *_indexing.__all__, *_interop.__all__, *_linalg.__all__, *_manip.__all__, *_search.__all__, *_stats.__all__,
           *_creation_grid.__all__, *_utility.__all__, *_sets.__all__]
