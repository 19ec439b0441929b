"""Neural-network ops: softmax, norms, activations, attention, convolution."""
