"""Sentence-pool context compression: the system that answers questions from one vector per sentence."""
