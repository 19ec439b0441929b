"""Scale-out on Ray: run batches of programs and array work on every adapter of a host or a cluster.

Install with ``pip install 'vyre[distributed]'``. Importing this package loads neither Ray nor wgpu;
Ray starts with the first pool. See docs/distributed.md.

* :func:`local_pool` -- one worker per adapter of this machine (Ray started here);
* :class:`Pool` -- workers on a running Ray cluster, placed by the ``vyre_adapter`` resource;
* ``pool.dispatch_batch(jobs)``, ``pool.map(program, inputs)``, ``pool.elementwise/matmul/reduce/scan/sort``,
  ``pool.stats()``, ``pool.shutdown()``.
"""

from __future__ import annotations

from .batch import BatchRun
from .placement import RESOURCE, host_adapters
from .pool import Pool, local_pool
from .training import DataParallel
from .worker import AdapterWorker

__all__ = ["Pool", "local_pool", "DataParallel", "BatchRun", "AdapterWorker", "RESOURCE", "host_adapters"]
