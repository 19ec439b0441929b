"""The derivative rules: one table, an entry per vyre.array function name (tinygrad's gradient.py is the
model). A rule is ``rule(g, out, *params) -> gradients``: ``g`` the gradient reaching the output (a list of
them for a function returning several arrays), ``out`` the output, ``params`` the call's arguments in the
function's parameter order with its defaults filled in; it answers one gradient (an array or None) per
parameter, a list for a parameter that is a sequence of arrays (concat, stack, meshgrid). Every rule is
written with vyre.array's functions, so the backward pass is more lazy graph: it fuses as the forward pass
does and is recorded by an enclosing tape (second derivatives).

The families: vyre/autograd/rules_elementwise.py, rules_reduce.py, rules_shape.py (manipulation, indexing,
sorting), rules_linalg.py and _scatter.py (the deterministic scatter-add behind the gathers).

Not in the table:

* :data:`ZERO`: piecewise-constant functions of float arrays (floor, ceil, trunc, round, sign,
  floor_divide) and the ``*_like`` constructors: their outputs are constants, no gradient flows back.
* functions whose outputs are not floating point (comparisons, logical and bitwise functions, argmax,
  argmin, argsort, nonzero, searchsorted, count_nonzero, all, any, isnan, isinf, isfinite, signbit,
  astype to an integer or bool dtype, the unique_* counts and indices): never recorded.
* anything else on the path of a gradient (unique_values, run_pipeline_on, to_device to another device, a
  numpy function on vyre arrays inside a tape): an InvalidArgumentError naming it, never a silent zero.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import _scatter, rules_elementwise, rules_linalg, rules_reduce, rules_shape

Rule = Callable[..., Any]

RULES: dict[str, Rule] = {**rules_elementwise.RULES, **rules_reduce.RULES, **rules_shape.RULES, **rules_linalg.RULES,
                         **_scatter.RULES}
ZERO: frozenset[str] = rules_elementwise.ZERO

__all__ = ["RULES", "ZERO", "Rule"]
