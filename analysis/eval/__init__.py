"""Evaluation: STS scoring, the task families (retrieval, MTEB classification and clustering, long documents, the
probe) behind one tasks interface, statistics, records, the MTEB-style encoder."""
