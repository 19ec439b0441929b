"""Bad host inputs fail with a typed vyre error on both backends, before any GPU work."""

from __future__ import annotations

import numpy as np
import pytest

from vyre.errors import DispatchError

BACKENDS = ["gpu", "reference"]


@pytest.fixture(params=BACKENDS)
def backend(request):
    return request.getfixturevalue(request.param)


def test_upload_resident_object_array_is_a_dispatch_error(backend):
    h = backend.allocate_resident(16)
    try:
        backend.upload_resident(h, np.arange(4, dtype=np.uint32))
        with pytest.raises(DispatchError, match="Python objects") as exc:
            backend.upload_resident(h, np.array([object()] * 4))
        assert exc.value.fix
        with pytest.raises(DispatchError, match="Python objects"):
            backend.upload_resident_many([(h, np.array([object()] * 4), 0)])
        # the buffer and its contents are untouched
        np.testing.assert_array_equal(backend.download_resident(h).view(np.uint32), np.arange(4))
    finally:
        backend.free_resident(h)
