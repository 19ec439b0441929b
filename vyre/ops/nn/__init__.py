"""Neural-network ops: softmax, norms, activations, attention, convolution."""

from ..namespace import install as _install_namespace

_install_namespace(__name__)  # vyre.ops.nn.<op>: this package is also its op family namespace
