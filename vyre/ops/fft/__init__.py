"""fft: discrete Fourier transforms over the last axis (or the last two), numpy.fft's conventions.

Complex data lives on the device as interleaved f32 pairs (``vec2<f32>`` buffers); the ops'
pipelines take and return f32 arrays of shape ``(..., n, 2)``, and ``vyre.ops.fft_fft`` and
its siblings convert numpy complex64 at the boundary. Powers of two run as radix-4/2 FFTs in
workgroup memory (one pass up to 2048 points, a four-step two-pass decomposition up to 2^22);
other lengths go through Bluestein's chirp-z transform over a power-of-two FFT.
"""

from ..namespace import install as _install_namespace

_install_namespace(__name__)  # vyre.ops.fft.<op>: this package is also its op family namespace
