"""Evaluation: metrics, STS scoring, benchmark tasks, the MTEB-style encoder."""
