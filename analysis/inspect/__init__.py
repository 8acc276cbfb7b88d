"""Looking inside: attention, Jacobian sensitivity, geometry, intrinsic dimension, soft-token generation."""
