"""Foundations every other folder builds on: tokens, one forward pass with captures, pooling, traces, errors, paths, budgets."""
