"""What every experiment is made with, beside the experiments themselves (the modules one folder up, registered in
`analysis.experiments.EXPERIMENTS`): the typed record and its schema (`records`), the provenance a record carries
(`provenance`), the markdown of RESULTS.md and the README (`render`), the verdict rules the claims board judges by
(`verdicts`), how numbers read in a cell (`cells`), the declared differences from the papers (`fidelity`), the held-out
STS pairs several experiments share (`heldout_sts`) and the training runs behind a record (`training_runs`)."""
