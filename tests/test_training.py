"""The training foundation: losses with hand-computed answers, the loop's guarantees, artefacts, the command."""

import json
import math

import pytest
import torch

from analysis.core.errors import UserError
from analysis.weights import artefacts
from analysis.training.losses import answer_cross_entropy, cosent, info_nce
from analysis.training.loop import StopTraining, TrainConfig, lr_at, train

S = 1 / math.sqrt(2)


# ---- losses: every expected value is written out by hand ---------------------------------------------------
def test_info_nce_identity_pairs():
    eye = torch.eye(2)
    # logits [[1/t, 0], [0, 1/t]]: each row's loss is -log(e^(1/t) / (e^(1/t) + 1)) = log(1 + e^(-1/t))
    assert info_nce(eye, eye, temperature=1.0).item() == pytest.approx(math.log(1 + math.exp(-1)), abs=1e-6)
    assert info_nce(eye, eye, temperature=0.5).item() == pytest.approx(math.log(1 + math.exp(-2)), abs=1e-6)
    scaled = info_nce(3 * eye, 0.5 * eye, temperature=1.0).item()  # cosine: norms do not matter
    assert scaled == pytest.approx(math.log(1 + math.exp(-1)), abs=1e-6)


def test_info_nce_asymmetric_and_symmetric():
    q = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    d = torch.tensor([[1.0, 0.0], [S, S]])
    # q -> d, t = 1: row 0 logits [1, S] target 0; row 1 logits [0, S] target 1
    fwd = (math.log(1 + math.exp(S - 1)) + math.log(1 + math.exp(0 - S))) / 2
    # d -> q: d0 vs q = [1, 0] target 0; d1 vs q = [S, S] target 1 -> log 2
    bwd = (math.log(1 + math.exp(-1)) + math.log(2)) / 2
    assert info_nce(q, d, temperature=1.0).item() == pytest.approx(fwd, abs=1e-6)
    assert info_nce(q, d, temperature=1.0, symmetric=True).item() == pytest.approx((fwd + bwd) / 2, abs=1e-6)


def test_info_nce_hard_negatives():
    q, d = torch.tensor([[1.0, 0.0]]), torch.tensor([[1.0, 0.0]])
    assert info_nce(q, d, temperature=1.0).item() == pytest.approx(0.0, abs=1e-7)  # no negative at all
    hn = torch.tensor([[0.0, 1.0]])  # cos 0: logits [1, 0]
    expected = math.log(1 + math.exp(-1))
    assert info_nce(q, d, temperature=1.0, hard_negatives=hn).item() == pytest.approx(expected, abs=1e-6)
    hn2 = torch.tensor([[[0.0, 1.0], [-1.0, 0.0]]])  # (B, H, D): logits [1, 0, -1]
    expected = -math.log(math.e / (math.e + 1 + math.exp(-1)))
    assert info_nce(q, d, temperature=1.0, hard_negatives=hn2).item() == pytest.approx(expected, abs=1e-6)


def test_info_nce_shape_error():
    with pytest.raises(ValueError):
        info_nce(torch.zeros(2, 3), torch.zeros(3, 3))


def test_cosent_known_answers():
    a = torch.tensor([[1.0, 0.0], [1.0, 0.0]])
    b = torch.tensor([[1.0, 0.0], [0.0, 1.0]])  # cosines [1, 0]
    # right order (pair 0 scored higher and has the higher cosine): log(1 + e^(s * (0 - 1)))
    right = torch.tensor([5.0, 1.0])
    assert cosent(a, b, right, scale=1.0).item() == pytest.approx(math.log(1 + math.exp(-1)), abs=1e-6)
    assert cosent(a, b, right, scale=20.0).item() == pytest.approx(math.log(1 + math.exp(-20)), abs=1e-6)
    # wrong order: log(1 + e^(1 - 0))
    assert cosent(a, b, torch.tensor([1.0, 5.0]), scale=1.0).item() == pytest.approx(math.log(1 + math.e), abs=1e-6)
    # ties say nothing: log(1) = 0
    assert cosent(a, b, torch.tensor([2.0, 2.0]), scale=1.0).item() == pytest.approx(0.0, abs=1e-7)


def test_cosent_three_pairs():
    a = torch.tensor([[1.0, 0.0]] * 3)
    b = torch.tensor([[1.0, 0.0], [S, S], [0.0, 1.0]])  # cosines [1, S, 0]
    scores = torch.tensor([0.0, 1.0, 2.0])  # exactly reversed: pairs (1,0), (2,0), (2,1) are ordered
    expected = math.log(1 + math.exp(1 - S) + math.exp(1 - 0) + math.exp(S - 0))
    assert cosent(a, b, scores, scale=1.0).item() == pytest.approx(expected, abs=1e-6)


def test_answer_cross_entropy():
    logits = torch.zeros(1, 3, 2)
    logits[0, 1] = torch.tensor([0.0, math.log(3)])  # p(token 1) = 3/4
    logits[0, 0] = torch.tensor([100.0, -100.0])  # ignored position: would be a huge loss for label 1
    labels = torch.tensor([[-100, 1, -100]])
    assert answer_cross_entropy(logits, labels).item() == pytest.approx(-math.log(0.75), abs=1e-6)
    uniform = torch.zeros(2, 2, 4)
    labels = torch.tensor([[0, 3], [-100, 2]])
    assert answer_cross_entropy(uniform, labels).item() == pytest.approx(math.log(4), abs=1e-6)
    none = answer_cross_entropy(logits.requires_grad_(), torch.full((1, 3), -100))
    assert none.item() == 0.0 and none.requires_grad


# ---- the loop on a toy regression ----------------------------------------------------------------------------
TRUE_W = torch.tensor([1.5, -2.0, 0.5])


def toy_batches(seed=0, batch=4):
    g = torch.Generator().manual_seed(seed)
    while True:
        x = torch.randn(batch, 3, generator=g)
        yield x, x @ TRUE_W


def toy_run(tmp_path, name, *, progress=None, resume=False, steps=20, grad_accum=1, batch=4, patience=0,
            scores=None, **over):
    torch.manual_seed(123)
    w = torch.zeros(3, requires_grad=True)
    saved = []
    cfg = TrainConfig(steps=steps, batch_size=batch, grad_accum=grad_accum, lr=0.3, warmup_steps=3, eval_every=5,
                      patience=patience, seed=0, out_dir=str(tmp_path / name), resume=resume, **over)
    calls = iter(scores) if scores is not None else None

    def evaluate():
        return {"score": next(calls) if calls else -float(((w.detach() - TRUE_W) ** 2).sum())}

    def save(folder):
        folder.mkdir(parents=True, exist_ok=True)
        saved.append(w.detach().clone())

    def loss_fn(b):
        x, y = b
        loss = ((x @ w - y) ** 2).mean()
        return loss, {"mse": loss.item()}

    result = train(cfg, parameters={"w": w}, loss_fn=loss_fn, batches=toy_batches(batch=batch), evaluate=evaluate,
                   save=save, progress=progress, log_extra={"toy": True})
    return result, w.detach().clone(), saved


def test_loop_lowers_loss_and_is_deterministic(tmp_path):
    r1, w1, saved = toy_run(tmp_path, "a")
    r2, w2, _ = toy_run(tmp_path, "b")
    losses = [t["loss"] for t in r1.curves["train"]]
    assert sum(losses[-5:]) < 0.2 * sum(losses[:5])
    assert torch.equal(w1, w2) and losses == [t["loss"] for t in r2.curves["train"]]
    assert [e["step"] for e in r1.curves["eval"]] == [0, 5, 10, 15, 20]
    assert r1.stopped == "completed" and r1.steps_done == 20 and r1.best_step == 20 and saved
    log = json.loads((tmp_path / "a" / "log.json").read_text())
    assert log["extra"] == {"toy": True} and len(log["train"]) == 20 and log["config"]["steps"] == 20
    assert log["train"][0]["mse"] == pytest.approx(log["train"][0]["loss"])


def test_grad_accumulation_equals_bigger_batch(tmp_path):
    # two micro-batches of 2 with accumulation == one batch of 4 (the toy stream yields the same rows either way)
    _, w_acc, _ = toy_run(tmp_path, "acc", batch=2, grad_accum=2, steps=6)
    _, w_big, _ = toy_run(tmp_path, "big", batch=4, grad_accum=1, steps=6)
    assert torch.allclose(w_acc, w_big, atol=1e-6)


def test_early_stopping_keeps_best(tmp_path):
    r, _, saved = toy_run(tmp_path, "es", steps=50, patience=2, scores=[0.5, 0.9, 0.8, 0.7, 0.95, 0.1])
    assert r.stopped == "early_stopping" and r.best_step == 5 and r.best_score == pytest.approx(0.9)
    assert r.steps_done == 15 and len(saved) == 2  # step 0 and step 5 improved


def test_step_zero_is_never_the_result_when_not_selectable(tmp_path):
    # known answer: the untrained start scores best (1.0), yet a trained system ships its best trained step (10)
    r, _, saved = toy_run(tmp_path, "s0", steps=15, scores=[1.0, 0.5, 0.7, 0.6], select_start=False)
    assert r.best_step == 10 and r.best_score == pytest.approx(0.7)
    assert [e["step"] for e in r.curves["eval"]] == [0, 5, 10, 15]  # step 0 stays on the curve as its baseline
    plain, _, _ = toy_run(tmp_path, "s1", steps=15, scores=[1.0, 0.5, 0.7, 0.6])
    assert plain.best_step == 0  # the loop's own default still lets step 0 win


def test_resume_continues_exactly(tmp_path):
    full, w_full, _ = toy_run(tmp_path, "full")

    def stop_at_7(step, total, info):
        if step == 7:
            raise StopTraining

    part, _, _ = toy_run(tmp_path, "part", progress=stop_at_7)
    assert part.stopped == "stopped" and part.steps_done == 7
    resumed, w_res, _ = toy_run(tmp_path, "part", resume=True)
    assert resumed.steps_done == 20
    assert torch.equal(w_full, w_res)
    assert [t["loss"] for t in resumed.curves["train"]] == [t["loss"] for t in full.curves["train"]]


def test_progress_and_lr_schedule(tmp_path):
    seen = []
    toy_run(tmp_path, "p", progress=lambda s, t, info: seen.append((s, t, "loss" in info)), steps=4)
    assert seen == [(1, 4, True), (2, 4, True), (3, 4, True), (4, 4, True)]
    cfg = TrainConfig(steps=100, lr=1.0, warmup_steps=10, min_lr_ratio=0.1)
    assert lr_at(cfg, 0) == pytest.approx(0.1) and lr_at(cfg, 9) == pytest.approx(1.0)
    assert lr_at(cfg, 10) == pytest.approx(1.0) and lr_at(cfg, 100) == pytest.approx(0.1)


def test_bad_config_is_one_sentence(tmp_path):
    with pytest.raises(UserError, match="steps must be at least 1"):
        toy_run(tmp_path, "bad", steps=0)


# ---- artefacts ------------------------------------------------------------------------------------------------
def test_artefact_roundtrip_and_refusals(tmp_path):
    w = {"w1": torch.arange(6.0).reshape(2, 3)}
    folder = artefacts.save_artefact(tmp_path / "a", w, {"method": "m", "model_identity": "model-x", "encoder": "enc"})
    tensors, manifest = artefacts.load_artefact(folder, method="m", model_identity="model-x", encoder="enc")
    assert torch.equal(tensors["w1"], w["w1"]) and manifest["code_version"] and manifest["weights_sha256"]
    for kwargs, words in [({"method": "other"}, "method"), ({"method": "m", "model_identity": "y"}, "model"),
                          ({"method": "m", "encoder": "e2"}, "encoder")]:
        with pytest.raises(UserError, match=words) as err:
            artefacts.load_artefact(folder, **kwargs)
        assert str(err.value).count(". ") == 0  # one sentence
    with pytest.raises(UserError, match="no manifest.json"):
        artefacts.load_artefact(tmp_path / "missing", method="m")


def test_artefact_digest_tracks_weights(tmp_path):
    a = artefacts.save_artefact(tmp_path / "a", {"w": torch.zeros(3)}, {"method": "m"})
    d1 = artefacts.artefact_digest(a)
    assert d1 == artefacts.artefact_digest(a)
    artefacts.save_artefact(a, {"w": torch.ones(3)}, {"method": "m"})
    assert artefacts.artefact_digest(a) != d1
    (a / "weights.safetensors").write_bytes((a / "weights.safetensors").read_bytes()[:-1] + b"\x01")
    with pytest.raises(UserError, match="do not match"):
        artefacts.load_artefact(a, method="m")


def test_bfloat16_autocast_trains_float32_weights(tmp_path):
    """The forward runs under autocast, the trained tensor and its AdamW moments stay float32, and the toy still
    converges: bfloat16's 8-bit mantissa costs precision in the loss, not in the update."""
    r, w, _ = toy_run(tmp_path, "bf16", precision="bfloat16", steps=30)
    losses = [t["loss"] for t in r.curves["train"]]
    assert w.dtype == torch.float32 and sum(losses[-5:]) < 0.2 * sum(losses[:5])
    assert json.loads((tmp_path / "bf16" / "log.json").read_text())["config"]["precision"] == "bfloat16"
