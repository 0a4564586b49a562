"""Seed 002's experiment (section 5, Fig. 1), reproduced with dpstudio's leakage engine.

Datasets (high vs low feature-label dependence):
* simulation: 10-dim x ~ N(e_{y+1}, sigma^2 I) (class-conditional means e_1, e_2), each dimension
  min-max normalised to [0, 1]; D_high sigma=0.5, D_low sigma=2.5;
* Breast Cancer (sklearn, offline): the 10 features with the highest / lowest mutual information
  with the label (``mutual_info_classif``, benchmark-only dependency).

For each eps in {0.5, 1, 2, 4}: labels released by binary RR; cross-fitted P(y|x) (dpstudio
logistic, 5 folds); attackers' expected accuracy in closed form (dpstudio LabelLeakageModel)
plus one simulated RR draw for a Monte-Carlo check; utility = test AUC of a logistic model trained
on the RR-released training labels (70/30 split; mean over ``reps`` RR draws).

Run:  QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/seed002_experiment.py
Writes benchmarks/seed002_attack_vs_auc.png and prints JSON.
"""

from __future__ import annotations

import json
import os
import sys
from itertools import pairwise
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dpstudio.engine.leakage.label import LabelLeakageModel, flip_probability
from dpstudio.engine.leakage.logistic import Design, fit_logistic

EPS = (0.5, 1.0, 2.0, 4.0)


def simulated(sigma: float, n: int, seed: int):
    g = np.random.default_rng(seed)
    y = g.integers(0, 2, n)
    mean = np.zeros((n, 10))
    mean[np.arange(n), y] = 1.0  # class 0 -> e_1, class 1 -> e_2
    x = mean + sigma * g.normal(size=(n, 10))
    x = (x - x.min(0)) / (x.max(0) - x.min(0))
    return x, y


def breast_cancer_sets(seed: int = 0):
    from sklearn.datasets import load_breast_cancer
    from sklearn.feature_selection import mutual_info_classif

    d = load_breast_cancer()
    x = (d.data - d.data.min(0)) / (d.data.max(0) - d.data.min(0))
    mi = mutual_info_classif(x, d.target, random_state=seed)
    order = np.argsort(mi)
    return {"high": (x[:, order[-10:]], d.target, mi[order[-10:]]), "low": (x[:, order[:10]], d.target, mi[order[:10]])}


def _auc(score, y):
    r = pd.Series(score).rank().to_numpy()
    n1 = int(y.sum())
    n0 = y.size - n1
    return float((r[y == 1].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


def evaluate(x: np.ndarray, y: np.ndarray, *, reps: int = 5, seed: int = 0, with_auc: bool = True) -> dict:
    g = np.random.default_rng(seed)
    frame = pd.DataFrame(x, columns=[f"f{i}" for i in range(x.shape[1])]).assign(y=y)
    model = LabelLeakageModel.fit(frame, list(frame.columns[:-1]), "y", seed=seed)
    acc = model.accuracies(np.array(EPS))
    n = y.size
    perm = g.permutation(n)
    ntr = int(0.7 * n)
    tr, te = perm[:ntr], perm[ntr:]
    mu, sd = x[tr].mean(0), x[tr].std(0) + 1e-12
    Dtr = Design((x[tr] - mu) / sd)
    Dte = Design((x[te] - mu) / sd)
    out = {"n": int(n), "prior_1": float(y.mean()), "uninformed": float(acc["uninformed"][0]), "by_eps": {}}
    L = np.log(np.clip(model.P[:, 1], 1e-6, 1 - 1e-6) / np.clip(model.P[:, 0], 1e-6, 1 - 1e-6))
    for j, eps in enumerate(EPS):
        pi = float(flip_probability(eps))
        aucs, mc_inf, mc_naive = [], [], []
        for _ in range(reps):
            flip = g.random(n) < pi
            yt = np.where(flip, 1 - y, y)
            guess = np.where(np.abs(L) <= eps, yt, (L > 0).astype(int))
            mc_inf.append(np.mean(guess == y))
            mc_naive.append(np.mean(yt == y))
            if with_auc:
                m = fit_logistic(Dtr, yt[tr], 2, l2=1e-3)
                aucs.append(_auc(m.predict_proba(Dte)[:, 1], y[te]))
        out["by_eps"][str(eps)] = {
            "informed": float(acc["informed"][j]),
            "naive": float(acc["naive"][j]),
            "informed_minus_naive": float(acc["informed"][j] - acc["naive"][j]),
            "informed_mc": float(np.mean(mc_inf)),
            "naive_mc": float(np.mean(mc_naive)),
            "test_auc": float(np.mean(aucs)) if aucs else None,
            "iue_adv_bound_mean": float(model.iue_adv(eps).mean()),
            "share_iue_adv_bound_above_0.1": float(model.at(eps)["iue_adv_bound"]["share_above"]),
        }
    out["k_median"] = float(model.k_summary()["quantiles"]["0.5"])
    out["share_k_above_1"] = float(model.k_summary()["share_k_above_1"])
    return out


def run_experiment(
    n_sim: int = 4000,
    reps: int = 5,
    seed: int = 0,
    sigma_high: float = 0.5,
    sigma_low: float = 2.5,
    with_auc: bool = True,
) -> dict:
    res = {"simulation": {}, "breast_cancer": {}}
    for name, sigma in (("high", sigma_high), ("low", sigma_low)):
        x, y = simulated(sigma, n_sim, seed)
        res["simulation"][name] = {"sigma": sigma, **evaluate(x, y, reps=reps, seed=seed, with_auc=with_auc)}
    for name, (x, y, mi) in breast_cancer_sets(seed).items():
        res["breast_cancer"][name] = {
            "mutual_information": [float(v) for v in mi],
            **evaluate(x, y, reps=reps, seed=seed, with_auc=with_auc),
        }
    return res


# ---- the figure: attacker accuracy (x) vs test AUC (y), seed 002 Fig. 1 ------------------------


def _plot_map(x0, y0, pw, ph, xlo, xhi, ylo, yhi):
    """Data (x, y) -> the panel's pixel QPointF (y grows upwards)."""
    from PySide6.QtCore import QPointF

    def pt(ax, ay):
        return QPointF(x0 + (ax - xlo) / (xhi - xlo) * pw, y0 + ph - (ay - ylo) / (yhi - ylo) * ph)

    return pt


def draw_figure(res: dict, path: Path) -> None:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QPointF, QRectF, Qt
    from PySide6.QtGui import QColor, QFont, QGuiApplication, QImage, QPainter, QPen

    app = QGuiApplication.instance() or QGuiApplication([])  # noqa: F841 - keeps Qt alive while painting
    W, H = 1300, 560
    img = QImage(W, H, QImage.Format_ARGB32)
    img.fill(QColor("white"))
    p = QPainter(img)
    p.setRenderHint(QPainter.Antialiasing)
    font = QFont()
    font.setPointSize(10)
    p.setFont(font)
    colors = {"high": QColor(200, 30, 30), "low": QColor(30, 60, 200)}
    styles = {"informed": Qt.DotLine, "naive": Qt.SolidLine, "uninformed": Qt.SolidLine}
    panels = (
        ("simulation", "(a) simulation: N(e_i, sigma^2 I)"),
        ("breast_cancer", "(b) Breast Cancer: top-10 / bottom-10 MI features"),
    )
    for k, (key, title) in enumerate(panels):
        x0, y0, pw, ph = 80 + k * 640, 50, 520, 420
        data = res[key]
        xs = [v for s in data.values() for e in s["by_eps"].values() for v in (e["informed"], e["naive"])] + [
            s["uninformed"] for s in data.values()
        ]
        ys = [e["test_auc"] for s in data.values() for e in s["by_eps"].values()]
        xlo, xhi = 0.5, 1.0
        ylo, yhi = min(0.5, min(ys) - 0.02), 1.0
        xlo = min(xlo, min(xs) - 0.02)
        pt = _plot_map(x0, y0, pw, ph, xlo, xhi, ylo, yhi)
        p.setPen(QPen(QColor("black"), 1))
        p.drawRect(QRectF(x0, y0, pw, ph))
        for i in range(6):
            tx = xlo + i * (xhi - xlo) / 5
            ty = ylo + i * (yhi - ylo) / 5
            a = pt(tx, ylo)
            p.drawLine(a, QPointF(a.x(), a.y() + 5))
            p.drawText(QPointF(a.x() - 15, a.y() + 20), f"{tx:.2f}")
            b = pt(xlo, ty)
            p.drawLine(b, QPointF(b.x() - 5, b.y()))
            p.drawText(QPointF(b.x() - 45, b.y() + 4), f"{ty:.2f}")
        p.drawText(QPointF(x0 + pw / 2 - 120, y0 + ph + 42), "attacker accuracy (privacy)")
        p.save()
        p.translate(x0 - 55, y0 + ph / 2 + 60)
        p.rotate(-90)
        p.drawText(QPointF(0, 0), "test AUC (utility)")
        p.restore()
        p.drawText(QPointF(x0, y0 - 12), title)
        for dname, s in data.items():
            eps_keys = list(s["by_eps"])
            aucs = [s["by_eps"][e]["test_auc"] for e in eps_keys]
            for att in ("informed", "naive", "uninformed"):
                col = QColor(colors[dname])
                if att == "uninformed":
                    col.setAlpha(90)
                pen = QPen(col, 2.5 if att != "uninformed" else 2)
                pen.setStyle(styles[att])
                p.setPen(pen)
                accs = [s["uninformed"] if att == "uninformed" else s["by_eps"][e][att] for e in eps_keys]
                pts = [pt(a, u) for a, u in zip(accs, aucs, strict=True)]
                for a, b in pairwise(pts):
                    p.drawLine(a, b)
                for q in pts:
                    p.drawEllipse(q, 3, 3)
            # eps labels next to the informed points
            p.setPen(QPen(colors[dname], 1))
            for e in eps_keys:
                q = pt(s["by_eps"][e]["informed"], s["by_eps"][e]["test_auc"])
                p.drawText(QPointF(q.x() + 5, q.y() - 5), f"eps={e}")
        # legend
        ly = y0 + ph - 95
        for i, (lab, dname, att) in enumerate(
            (
                ("D_high informed", "high", "informed"),
                ("D_high naive", "high", "naive"),
                ("D_high uninformed", "high", "uninformed"),
                ("D_low informed", "low", "informed"),
                ("D_low naive", "low", "naive"),
                ("D_low uninformed", "low", "uninformed"),
            )
        ):
            col = QColor(colors[dname])
            if att == "uninformed":
                col.setAlpha(90)
            pen = QPen(col, 2.5)
            pen.setStyle(styles[att])
            p.setPen(pen)
            yy = ly + i * 15
            p.drawLine(QPointF(x0 + 10, yy), QPointF(x0 + 45, yy))
            p.setPen(QPen(QColor("black"), 1))
            p.drawText(QPointF(x0 + 50, yy + 4), lab)
    p.end()
    if not img.save(str(path)):
        raise RuntimeError(f"could not write {path}")


def main() -> None:
    res = run_experiment()
    out = Path(__file__).resolve().parent / "seed002_attack_vs_auc.png"
    draw_figure(res, out)
    summary = {
        ds: {name: {e: {k: round(v, 4) for k, v in r.items()} for e, r in s["by_eps"].items()} for name, s in d.items()}
        for ds, d in res.items()
    }
    extra = {
        ds: {
            name: {
                "uninformed": round(s["uninformed"], 4),
                "k_median": round(s["k_median"], 3),
                "share_k_above_1": round(s["share_k_above_1"], 3),
            }
            for name, s in d.items()
        }
        for ds, d in res.items()
    }
    print(
        json.dumps(
            {"by_eps": summary, "per_set": extra, "figure": str(out), "figure_bytes": out.stat().st_size}, indent=1
        )
    )


if __name__ == "__main__":
    main()
