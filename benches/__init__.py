"""vyre benchmarks: ``python -m benches`` (see benches/__main__.py) and ``python -m benches.report``.

One module per benchmark family (elementwise, reduce, matmul, transfer, latency, sequence,
compile, scaling), each with ``plan(ctx) -> number of records`` and ``run(ctx)`` yielding
result records; shared timing, records and baselines live in ``_harness``.
"""
