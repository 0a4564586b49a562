"""AIM synthesizer: exact zCDP accounting, annealing, recovery at large epsilon, schema,
cancel and progress, and a 3-way interaction that a tree (MST) cannot hold."""

import math

import numpy as np
import pandas as pd
import pytest

from dpstudio.engine.progress import Cancelled, CancelToken
from dpstudio.engine.rng import RandomSource
from dpstudio.engine.synth import SYNTHESIZERS
from dpstudio.engine.synth.aim import AIMSynthesizer
from dpstudio.engine.synth.encoding import ColumnSpec, TableSpec
from dpstudio.engine.synth.mst import MSTSynthesizer
from dpstudio.engine.synth.privacy import zcdp_rho_for


def _table(n, seed, label=True):
    """Strong dependence: b follows a, c follows b, y = a xor b (a 3-way interaction)."""
    gen = np.random.default_rng(seed)
    a = gen.integers(0, 4, n)
    b = np.where(gen.random(n) < 0.85, a, gen.integers(0, 4, n))
    c = np.where(gen.random(n) < 0.8, b, gen.integers(0, 4, n))
    num = np.clip(10 * c + gen.integers(0, 10, n), 0, 39)
    y = (a % 2) ^ (b % 2)
    y = np.where(gen.random(n) < 0.05, 1 - y, y)
    cats = np.array(list("pqrs"))
    cols = {"a": cats[a], "b": cats[b], "c": cats[c], "num": num}
    feats = (
        ColumnSpec.categorical("a", "pqrs"),
        ColumnSpec.categorical("b", "pqrs"),
        ColumnSpec.categorical("c", "pqrs"),
        ColumnSpec.numeric("num", 0, 39, True),
    )
    if label:
        cols["y"] = y
        return pd.DataFrame(cols), TableSpec(feats, ColumnSpec.categorical("y", (0, 1)))
    return pd.DataFrame(cols), TableSpec(feats, None)


def _max_weight(d, label):
    """AIM's weights, brute force: w_r = sum over workload marginals s of |r & s|."""
    import itertools

    work = [set(p) for p in itertools.combinations(range(d), 2)]
    if label:
        work += [{i, j, d - 1} for i, j in itertools.combinations(range(d - 1), 2)]
    cands = {frozenset(s) for w in work for k in range(1, len(w) + 1) for s in itertools.combinations(w, k)}
    return max(sum(len(c & w) for w in work) for c in cands)


def test_registered():
    assert isinstance(SYNTHESIZERS["aim"](), AIMSynthesizer)
    assert AIMSynthesizer.name == "aim"


@pytest.mark.parametrize("eps", [0.3, 1.0, 4.0])
@pytest.mark.parametrize("label", [True, False])
def test_components_spend_exactly_the_target_rho(eps, label):
    data, spec = _table(1500, 1, label)
    f = AIMSynthesizer().fit(data, spec, epsilon=eps, delta=1e-6, rng=RandomSource(2))
    rho = zcdp_rho_for(eps, 1e-6)
    parts = [c.details["zcdp_rho"] for c in f.components]
    assert sum(parts) == pytest.approx(rho, rel=1e-9)
    loss = f.privacy_loss()
    assert loss.details["zcdp_rho"] == pytest.approx(rho, rel=1e-9)
    assert loss.epsilon == pytest.approx(eps, rel=1e-6) and loss.epsilon <= eps + 1e-9
    assert loss.details["n_releases"] == len(f.components)
    assert loss.details["proven_epsilon"] == loss.epsilon and loss.details["proven_delta"] == 1e-6
    d = len(spec.all_columns)
    labels = [c.label for c in f.components]
    assert labels[:d] == [f"AIM: 1-way {c.name}" for c in spec.all_columns]
    sel = [c for c in f.components if "exponential" in c.label]
    meas = [c for c in f.components[d:] if c.gdp_mu is not None]
    assert len(sel) == len(meas) == f.info["rounds"] >= 2
    assert sel[0].label == "AIM: selection round 1 (exponential mechanism)"
    for c in f.components:
        if c.gdp_mu is not None:  # Gaussian counts: replace-one moves one unit between two cells
            assert c.details["raw_sensitivity"] == pytest.approx(math.sqrt(2))
            assert c.details["zcdp_rho"] == pytest.approx(c.gdp_mu**2 / 2, rel=1e-12)
        else:  # score: 2 x the largest workload weight
            assert c.details["sensitivity"] == 2.0 * _max_weight(d, label)
            assert c.details["zcdp_rho"] == pytest.approx(c.epsilon**2 / 8, rel=1e-12)
    # every measurement after the 1-way ones is a selected marginal, named by its columns
    for t, (c, cl) in enumerate(zip(meas, f.info["cliques"], strict=True), start=1):  # one a round
        again = f" (round {t})" if len(cl) == 1 else ""  # a column measured again in a round
        assert c.label == f"AIM: {len(cl)}-way " + " x ".join(cl) + again
    # budget plan: public shares summing to one
    plan = AIMSynthesizer().budget_plan(eps, 1e-6, 1500, 2)
    assert sum(p["share"] for p in plan) == pytest.approx(1.0)


def test_annealing_quadruples_the_round_budget():
    data, spec = _table(3000, 3)
    f = AIMSynthesizer().fit(data, spec, epsilon=1.0, delta=1e-6, rng=RandomSource(4))
    assert f.info["anneals"] >= 1
    sel = [c.details["zcdp_rho"] for c in f.components if c.gdp_mu is None]
    ratios = [b / a for a, b in zip(sel[:-2], sel[1:-1], strict=True)]  # the last round takes what is left
    # an anneal in the round before the last one shows in no ratio
    assert sum(1 for r in ratios if r == pytest.approx(4.0)) in (f.info["anneals"], f.info["anneals"] - 1)
    assert any(r == pytest.approx(4.0) for r in ratios)
    assert all(r == pytest.approx(1.0) or r == pytest.approx(4.0) for r in ratios)


def _tv2(real, synth, spec):
    out = []
    names = [c.name for c in spec.all_columns]
    for i in range(len(names)):
        for j in range(i + 1, len(names)):
            p = real.groupby([names[i], names[j]]).size() / len(real)
            q = synth.groupby([names[i], names[j]]).size() / len(synth)
            p, q = p.align(q, fill_value=0.0)
            out.append(0.5 * float(np.abs(p - q).sum()))
    return out


def test_huge_epsilon_recovers_the_two_way_marginals():
    data, spec = _table(4000, 5)
    data["num"] = (data["num"] // 10) * 10  # on the public bins' grid: compare exactly
    f = AIMSynthesizer(bins=4).fit(data, spec, epsilon=1e4, delta=1e-6, rng=RandomSource(6))
    s = f.sample(40000, RandomSource(7))
    s["num"] = (s["num"] // 10) * 10
    tv = _tv2(data, s, spec)
    assert max(tv) < 0.03, tv


def test_output_schema_and_structural_zeros():
    data, spec = _table(2000, 8)
    data.loc[:99, "a"] = "zz"  # outside the public list: the hidden "unknown" cell
    f = AIMSynthesizer().fit(data, spec, epsilon=2.0, delta=1e-6, rng=RandomSource(9))
    s = f.sample(5000, RandomSource(10))
    assert list(s.columns) == [c.name for c in spec.all_columns] and len(s) == 5000
    assert set(s["a"]) <= set("pqrs") and set(s["b"]) <= set("pqrs")  # never the unknown cell
    assert set(s["y"]) <= {0, 1}
    assert s["num"].between(0, 39).all() and np.issubdtype(s["num"].dtype, np.integer)
    fid = f.marginal_fidelity(s)
    assert fid is not None and set(fid) == set(s.columns) and max(fid.values()) < 0.1
    info = f.info
    assert info["model_cells"] > 0 and info["fit_seconds"] > 0 and info["rounds"] == len(info["cliques"])
    # the same seeds give the same fit and sample
    g = AIMSynthesizer().fit(data, spec, epsilon=2.0, delta=1e-6, rng=RandomSource(9))
    pd.testing.assert_frame_equal(g.sample(5000, RandomSource(10)), s)


def test_infinite_epsilon_runs_without_noise():
    data, spec = _table(1000, 11)
    f = AIMSynthesizer().fit(data, spec, epsilon=math.inf, delta=1e-6, rng=RandomSource(1))
    assert f.privacy_loss().epsilon == math.inf
    assert len(f.sample(100, RandomSource(2))) == 100


def test_progress_and_cancel():
    data, spec = _table(1500, 12)
    seen = []
    AIMSynthesizer().fit(
        data, spec, epsilon=1.0, delta=1e-6, rng=RandomSource(1), progress=lambda f, m="": seen.append((f, m))
    )
    fr = [f for f, _ in seen]
    assert fr == sorted(fr) and fr[-1] == 1.0 and 0 < fr[0] < 1
    assert any(m.startswith("round ") for _, m in seen)

    token = CancelToken()
    rounds = []

    def cancel_at_round_2(f, m=""):
        if m.startswith("round "):
            rounds.append(m)
            if len(rounds) == 2:
                token.cancel()

    with pytest.raises(Cancelled):
        AIMSynthesizer().fit(
            data, spec, epsilon=1.0, delta=1e-6, rng=RandomSource(1), progress=cancel_at_round_2, cancel=token
        )
    assert len(rounds) == 2  # stopped at the next round's check

    # the final estimate (1,000 mirror-descent steps: 15 s on a 25k-row table) moves the bar and
    # stops at the next step when cancelled, not after the last (GUI walkthrough finding)
    steps = []

    def cancel_in_final_fit(f, m=""):
        if m.startswith("fitting the model: step"):
            steps.append((f, m))
            if len(steps) == 3:
                token.cancel()

    token = CancelToken()
    with pytest.raises(Cancelled):
        AIMSynthesizer().fit(
            data, spec, epsilon=1.0, delta=1e-6, rng=RandomSource(1), progress=cancel_in_final_fit, cancel=token
        )
    assert len(steps) == 3 and 0.9 <= steps[0][0] < steps[-1][0] < 1.0
    assert steps[-1][1] == "fitting the model: step 20 of 1000"  # cancelled within the next step


def test_three_way_interaction_beats_mst():
    """y = a xor b (each pairwise marginal with y is nearly uniform): MST's tree cannot hold
    it, AIM's workload has the 3-way marginal (a, b, y)."""
    gen = np.random.default_rng(13)
    n = 5000
    a, b = gen.integers(0, 4, n), gen.integers(0, 4, n)  # independent
    y = (a % 2) ^ (b % 2)
    y = np.where(gen.random(n) < 0.05, 1 - y, y)
    c = np.where(gen.random(n) < 0.8, a, gen.integers(0, 4, n))
    cats = np.array(list("pqrs"))
    data = pd.DataFrame({"a": cats[a], "b": cats[b], "c": cats[c], "num": gen.integers(0, 40, n), "y": y})
    _, spec = _table(10, 0)
    # each pair (a, y), (b, y) is close to independent: a tree of 2-way marginals cannot hold y
    assert abs(pd.crosstab(data["a"], data["y"], normalize="index")[1] - 0.5).max() < 0.05

    def xor_rate(s):
        sa = s["a"].map({"p": 0, "q": 1, "r": 0, "s": 1})
        sb = s["b"].map({"p": 0, "q": 1, "r": 0, "s": 1})
        return float(((sa ^ sb) == s["y"]).mean())

    aim = AIMSynthesizer().fit(data, spec, epsilon=1.0, delta=1e-6, rng=RandomSource(14))
    mst = MSTSynthesizer().fit(data, spec, epsilon=1.0, delta=1e-6, rng=RandomSource(14))
    r_aim = xor_rate(aim.sample(5000, RandomSource(15)))
    r_mst = xor_rate(mst.sample(5000, RandomSource(15)))
    assert r_aim > 0.85 and r_mst < 0.6, (r_aim, r_mst)
    assert ("a", "b", "y") in aim.info["cliques"] or any({"a", "b", "y"} <= set(c) for c in aim.info["junction_tree"])


def test_model_size_by_component_equals_the_whole_junction_tree():
    from dpstudio.engine.synth.aim import _ModelSize
    from dpstudio.engine.synth.pgm import model_size

    gen = np.random.default_rng(21)
    sizes = list(gen.integers(2, 9, 12))
    sizer = _ModelSize(sizes)
    for _ in range(30):
        k = int(gen.integers(3, 10))
        cliques = [(a,) for a in range(12)]
        cliques += [tuple(sorted(gen.choice(12, int(gen.integers(2, 4)), replace=False))) for _ in range(k)]
        sizer.set_model(cliques)
        assert sizer.total == model_size(sizes, cliques)
        for _ in range(5):
            c = tuple(sorted(gen.choice(12, int(gen.integers(1, 4)), replace=False)))
            assert sizer.with_clique(c) == model_size(sizes, cliques + [c])
