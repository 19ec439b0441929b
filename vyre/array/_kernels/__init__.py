"""What builds and runs programs for vyre.array, one module per idea (the surface modules of
vyre/array call these):

* expressions: nodes.py (the lazy node types, :func:`collect`), index_maps.py (the View nodes), emit.py
  (:data:`OPS` and the :class:`Emitter` turning a tree into IR), elementwise.py and float_math.py (the
  ops' IR), dtypes.py (the dtype tables: IR types, promotion);
* fusion: fused.py (one program per pending tree, plans, deferred work, evaluation, ``fusion_stats``),
  vec4.py (the vec4 variant), cache.py (the one program-cache registry every family registers in);
* kernel families: reduction.py, reduce.py, reduce_rows.py, reduce_columns.py (reductions), scan.py
  (cumulative sums and products), sort.py (order keys, argsort, the sorted gather), search.py (argmax,
  nonzero, searchsorted), sets.py (unique_*), gather.py (indexing's gather/scatter/copy), concat.py,
  matmul.py, pipeline.py (op-library pipelines on arrays, ``run_pipeline_on``).
"""
