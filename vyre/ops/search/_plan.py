"""The steps of one search, shared by the ``search.knn`` pipeline and ``FlatIndex``'s resident
sequence: named buffers with their element counts, and (program, buffer names, grid) steps.

``k <= MAX_K``: norms (l2), the fused partial program, the merge. A larger k runs rounds of
``MAX_K`` results (``_knn.rounds_for``): each round is a fused pass whose candidates must rank
after the previous round's last result (its bound), merged into round buffers, gathered into
the output columns, and the round's last result becomes the next bound. The q x n distance
matrix never goes to memory on either path; a round costs a full pass over the database.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...ir.program import Program
from ...ir.types import DataType
from ._knn import (
    MAX_K,
    bounds_program,
    gather_program,
    knn_grids,
    merge_program,
    norms_program,
    partial_program,
    rounds_for,
    slices_for,
    vec4_rows,
)

F32, U32, F32X4 = DataType.F32, DataType.U32, DataType("vec4<f32>")


@dataclass(frozen=True)
class SearchPlan:
    buffers: dict[str, tuple[DataType, int]]  # name -> (dtype, element count)
    steps: list[tuple[Program, tuple[str, ...], tuple[int, int, int]]]


def search_plan(n: int, d: int, q: int, k: int, metric: str, slices: int | None = None,
                database_norms: bool = True) -> SearchPlan:
    """The buffers and steps of a search; ``database_norms=False`` leaves out the step computing
    ``xnorm`` (a FlatIndex keeps it up to date)."""
    S = slices_for(n, q, slices)
    grids = knn_grids(n, q, S)
    rows = (F32X4, d // 4) if vec4_rows(d) else (F32, d)
    rounds = rounds_for(k)
    kr = k if len(rounds) == 1 else MAX_K
    buffers = {"queries": (rows[0], q * rows[1]), "database": (rows[0], n * rows[1]),
               "part_keys": (F32, S * q * kr), "part_ids": (U32, S * q * kr),
               "distances": (F32, q * k), "indices": (U32, q * k)}
    steps: list[tuple[Program, tuple[str, ...], tuple[int, int, int]]] = []
    data: tuple[str, ...] = ("queries", "database")
    if metric == "l2":
        buffers["qnorm"], buffers["xnorm"] = (F32, q), (F32, n)
        steps.append((norms_program(d), ("queries", "qnorm"), grids["qnorm"]))
        if database_norms:
            steps.append((norms_program(d), ("database", "xnorm"), grids["xnorm"]))
        data += ("qnorm", "xnorm")
    part = ("part_keys", "part_ids")
    if len(rounds) == 1:
        steps.append((partial_program(d, k, metric), data + part, grids["partial"]))
        steps.append((merge_program(k, metric), part + ("distances", "indices"), grids["merge"]))
        return SearchPlan(buffers, steps)
    buffers.update({"round_distances": (F32, q * kr), "round_indices": (U32, q * kr),
                    "bound_keys": (F32, q), "bound_ids": (U32, q)})
    for r, offset in enumerate(rounds):
        bound = ("bound_keys", "bound_ids") if r else ()
        steps.append((partial_program(d, kr, metric, bounded=r > 0), data + bound + part, grids["partial"]))
        steps.append((merge_program(kr, metric), part + ("round_distances", "round_indices"), grids["merge"]))
        steps.append((gather_program(kr, k, offset), ("round_distances", "round_indices", "distances", "indices"),
                      grids["gather"]))
        if r + 1 < len(rounds):
            steps.append((bounds_program(kr, metric), ("round_distances", "round_indices", "bound_keys",
                                                       "bound_ids"), grids["bounds"]))
    return SearchPlan(buffers, steps)


__all__ = ["SearchPlan", "search_plan"]
