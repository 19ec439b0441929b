"""The operator and name enums of the IR nodes (:mod:`vyre.ir.nodes` re-exports every name here).

Plain ``str`` enums: their values are the spellings the wire format (and, for most, WGSL) uses.
"""

from __future__ import annotations

from enum import Enum


class UnOp(str, Enum):
    NEG = "neg"
    NOT = "not"  # logical not on bool, bitwise complement on integers
    ABS = "abs"
    SQRT = "sqrt"
    INVERSE_SQRT = "inverse_sqrt"
    EXP = "exp"
    EXP2 = "exp2"
    LOG = "log"
    LOG2 = "log2"
    SIN = "sin"
    COS = "cos"
    TAN = "tan"
    TANH = "tanh"
    FLOOR = "floor"
    CEIL = "ceil"
    ROUND = "round"  # half to even, like WGSL round()
    TRUNC = "trunc"
    FRACT = "fract"
    SIGN = "sign"
    COUNT_ONES = "count_ones"
    REVERSE_BITS = "reverse_bits"
    COUNT_LEADING_ZEROS = "count_leading_zeros"
    COUNT_TRAILING_ZEROS = "count_trailing_zeros"


FLOAT_UNOPS = frozenset(
    {
        UnOp.SQRT, UnOp.INVERSE_SQRT, UnOp.EXP, UnOp.EXP2, UnOp.LOG, UnOp.LOG2, UnOp.SIN,
        UnOp.COS, UnOp.TAN, UnOp.TANH, UnOp.FLOOR, UnOp.CEIL, UnOp.ROUND, UnOp.TRUNC, UnOp.FRACT,
    }
)
INT_UNOPS = frozenset(
    {UnOp.COUNT_ONES, UnOp.REVERSE_BITS, UnOp.COUNT_LEADING_ZEROS, UnOp.COUNT_TRAILING_ZEROS}
)


class BinOp(str, Enum):
    ADD = "add"
    SUB = "sub"
    MUL = "mul"
    DIV = "div"
    REM = "rem"
    MIN = "min"
    MAX = "max"
    POW = "pow"
    BIT_AND = "bit_and"
    BIT_OR = "bit_or"
    BIT_XOR = "bit_xor"
    SHL = "shl"
    SHR = "shr"
    EQ = "eq"
    NE = "ne"
    LT = "lt"
    LE = "le"
    GT = "gt"
    GE = "ge"
    AND = "and"  # logical, bool operands
    OR = "or"  # logical, bool operands


ARITH_BINOPS = frozenset({BinOp.ADD, BinOp.SUB, BinOp.MUL, BinOp.DIV, BinOp.REM, BinOp.MIN, BinOp.MAX})
BIT_BINOPS = frozenset({BinOp.BIT_AND, BinOp.BIT_OR, BinOp.BIT_XOR})
SHIFT_BINOPS = frozenset({BinOp.SHL, BinOp.SHR})
COMPARE_BINOPS = frozenset({BinOp.EQ, BinOp.NE, BinOp.LT, BinOp.LE, BinOp.GT, BinOp.GE})
LOGIC_BINOPS = frozenset({BinOp.AND, BinOp.OR})


class AtomicOp(str, Enum):
    ADD = "add"
    SUB = "sub"
    MIN = "min"
    MAX = "max"
    AND = "and"
    OR = "or"
    XOR = "xor"
    EXCHANGE = "exchange"
    COMPARE_EXCHANGE = "compare_exchange"  # returns the old value
    LOAD = "load"


class BuiltinName(str, Enum):
    GLOBAL_ID = "global_id"  # vec3 component, needs axis
    LOCAL_ID = "local_id"  # vec3 component, needs axis
    WORKGROUP_ID = "workgroup_id"  # vec3 component, needs axis
    NUM_WORKGROUPS = "num_workgroups"  # vec3 component, needs axis
    GLOBAL_INDEX = "global_index"  # linear index over the whole (logical) grid
    LOCAL_INDEX = "local_index"  # linear index inside the workgroup
    SUBGROUP_INVOCATION_ID = "subgroup_invocation_id"  # lane inside the subgroup (needs the subgroups feature)
    SUBGROUP_SIZE = "subgroup_size"  # invocations per subgroup (needs the subgroups feature)


AXIS_BUILTINS = frozenset(
    {BuiltinName.GLOBAL_ID, BuiltinName.LOCAL_ID, BuiltinName.WORKGROUP_ID, BuiltinName.NUM_WORKGROUPS}
)


SUBGROUP_BUILTINS = frozenset({BuiltinName.SUBGROUP_INVOCATION_ID, BuiltinName.SUBGROUP_SIZE})


class SubgroupOp(str, Enum):
    """Operations across the active invocations of a subgroup (WGSL's ``subgroup*`` built-ins)."""

    ADD = "add"
    MUL = "mul"
    MIN = "min"
    MAX = "max"
    AND = "and"
    OR = "or"
    XOR = "xor"
    ALL = "all"  # bool
    ANY = "any"  # bool
    INCLUSIVE_ADD = "inclusive_add"
    EXCLUSIVE_ADD = "exclusive_add"
    INCLUSIVE_MUL = "inclusive_mul"
    EXCLUSIVE_MUL = "exclusive_mul"
    BROADCAST = "broadcast"  # lane: a u32 literal
    BROADCAST_FIRST = "broadcast_first"
    SHUFFLE = "shuffle"  # lane: any u32
    SHUFFLE_XOR = "shuffle_xor"  # lane: a workgroup-uniform u32 mask
    SHUFFLE_UP = "shuffle_up"  # lane: a workgroup-uniform u32 delta
    SHUFFLE_DOWN = "shuffle_down"  # lane: a workgroup-uniform u32 delta
    BALLOT = "ballot"  # bool -> vec4<u32>


SUBGROUP_LANE_OPS = frozenset({SubgroupOp.BROADCAST, SubgroupOp.SHUFFLE, SubgroupOp.SHUFFLE_XOR,
                               SubgroupOp.SHUFFLE_UP, SubgroupOp.SHUFFLE_DOWN})


class BarrierScope(str, Enum):
    WORKGROUP = "workgroup"
    STORAGE = "storage"


__all__ = [
    "UnOp", "BinOp", "AtomicOp", "BuiltinName", "BarrierScope", "SubgroupOp", "FLOAT_UNOPS", "INT_UNOPS",
    "ARITH_BINOPS", "BIT_BINOPS", "SHIFT_BINOPS", "COMPARE_BINOPS", "LOGIC_BINOPS", "AXIS_BUILTINS",
    "SUBGROUP_BUILTINS", "SUBGROUP_LANE_OPS",
]
