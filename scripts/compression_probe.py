"""How much of each fact a frozen MiniLM pool carries: linear probes from one sentence's pool to its fact key and
to its value (84 classes), trained on the training personas' fact sentences and scored on the validation
split's. An upper bound on what the compression adapter has to work with, independent of the decoder.

    python3 scripts/compression_probe.py            # one JSON line: accuracy of each probe on validation

If a linear probe reads the value but the trained decoder does not, the failure is optimisation, not the pools.
"""

from __future__ import annotations

import argparse
import json
import random
import time


def fact_rows(pairs):
    from analysis.data.personas import KEYS
    from analysis.training.compression import fact_sentence

    sents, keys, values = [], [], []
    for p, ctx in pairs:
        for key in KEYS:
            sents.append(fact_sentence(p, ctx, key))
            keys.append(key)
            values.append(f"{key}:{p.value(key) if key != 'name' else p.first}")
    return sents, keys, values


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--personas", type=int, default=1000, help="training personas (the trainer's default)")
    ap.add_argument("--val", type=int, default=300, help="validation personas")
    args = ap.parse_args()

    from sklearn.linear_model import LogisticRegression

    from analysis.data import personas as P
    from analysis.compression.system import encode_sentences

    t = time.perf_counter()
    rng = random.Random("train-personas:0")  # the trainer's personas
    train = []
    for _ in range(args.personas):
        p = P.random_persona(rng, "train")
        train.append((p, P.paragraph(p, rng, rng.randint(0, 2))))
    vrng = random.Random("probe-validation:0")
    val = []
    for _ in range(args.val):
        p = P.random_persona(vrng, "validation")
        val.append((p, P.paragraph(p, vrng, 0)))
    (xs, ks, vs), (xv, kv, vv) = fact_rows(train), fact_rows(val)
    xt, xe = encode_sentences(xs), encode_sentences(xv)
    out = {"train_sentences": len(xs), "validation_sentences": len(xv)}
    for name, yt, ye in (("key", ks, kv), ("value", vs, vv)):
        clf = LogisticRegression(max_iter=2000, C=10.0).fit(xt, yt)
        out[f"{name}_classes"] = len(set(yt))
        out[f"{name}_accuracy"] = round(float((clf.predict(xe) == ye).mean()), 4)
    # the name value is the first name here: the surname is a separate 36-way choice, read the same way
    out["seconds"] = round(time.perf_counter() - t, 1)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
