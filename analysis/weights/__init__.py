"""Trained weights on disk: artefact folders (safetensors + manifest), shipped-weights lookup, adapters."""
