"""Data: built-in corpora, user files, the one registry of data sets, synthetic personas."""
