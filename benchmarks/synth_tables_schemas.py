"""Public schemas of the tables of ``benchmarks/synth_tables.py`` (nothing here is read from the data).

Each table names its files under ``../shared/datasets``, its label, the columns to drop
(identifier / ignore) and, for every kept column, either public numeric bounds or the public
category list a user with a code book would type (the ``public`` mode of the benchmark; in the
``dp`` mode the category lists are not given and the release estimates them with DP).

Sources of the public facts:

* **adult** - the census documentation as in ``spec_from_adult()`` (dpstudio/engine/synth/
  encoding.py, used by benchmarks/synth_adult.py): age 17-90, fnlwgt 10,000-1,500,000,
  education-num 1-16, capital-gain 0-99,999, capital-loss 0-4,356, hours-per-week 1-99; the
  categorical columns are integer codes 0..m-1 (education 16, workclass 9, marital-status 7,
  occupation 15, relationship 6, race 5, sex 2, native-country 41); label income_gt_50k {0, 1}.
* **pums** (Fulton County, GA extract) - ``puma``: the Census Bureau's published PUMA codes of
  the county, 1101..1107; the 0/1 flags {0, 1}; ``educ`` the PUMS education code 1..16; ``age``
  0..99 (the PUMS age range, top-coded); ``income`` -10,000..1,000,000: the PUMS person-income
  coding range (losses bottom-coded at -$10,000, amounts top-coded below $1,000,000 in the
  PUMS data dictionary), never the data's min/max; ``state`` and ``fips`` are one constant
  value each (Georgia, Fulton) and dropped (role ignore); label ``employed`` {0, 1}.
* **medical** (SmartNoise demo records) - ``ID`` is a direct identifier (dropped); Gender {F, M};
  Age: ten-year bands 0-9 .. 90-99; Zip: masked 3-digit prefixes, all "000**" .. "999**";
  Diagnosis: the ten conditions of the demo's code book; Treatment: a 3-digit treatment code,
  "000" .. "099" (the code book's range; the data uses a part of it); label Outcome with its
  three values.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATASETS = ROOT.parent / "shared" / "datasets"


@dataclass(frozen=True)
class Numeric:
    low: float
    high: float
    integer: bool = True


@dataclass(frozen=True)
class TableSchema:
    name: str
    #: the training file, and the test file when the table comes with a given split (else None:
    #: a deterministic stratified 80/20 split of ``train``)
    train: Path
    test: Path | None
    label: str
    #: kept columns in file order: name -> Numeric bounds or the public category list
    columns: dict[str, Numeric | tuple[str, ...]]
    identifiers: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()
    note: str = ""
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def categorical(self) -> list[str]:
        return [c for c, d in self.columns.items() if isinstance(d, tuple)]

    @property
    def numeric(self) -> list[str]:
        return [c for c, d in self.columns.items() if isinstance(d, Numeric)]


def _codes(n: int) -> tuple[str, ...]:
    return tuple(str(i) for i in range(n))


FLAG = ("0", "1")

ADULT = TableSchema(
    name="adult",
    train=DATASETS / "adult" / "train.csv",
    test=DATASETS / "adult" / "test.csv",
    label="income_gt_50k",
    columns={
        "age": Numeric(17, 90),
        "fnlwgt": Numeric(10_000, 1_500_000),
        "education-num": Numeric(1, 16),
        "capital-gain": Numeric(0, 99_999),
        "capital-loss": Numeric(0, 4_356),
        "hours-per-week": Numeric(1, 99),
        "education": _codes(16),
        "workclass": _codes(9),
        "marital-status": _codes(7),
        "occupation": _codes(15),
        "relationship": _codes(6),
        "race": _codes(5),
        "sex": _codes(2),
        "native-country": _codes(41),
        "income_gt_50k": FLAG,
    },
    note="the PEARL / DP-MERF papers' split (train 11,077 / test 1,231 rows)",
)

PUMS = TableSchema(
    name="pums",
    train=DATASETS / "pums" / "fulton_pums.csv",
    test=None,
    label="employed",
    columns={
        "puma": tuple(str(p) for p in range(1101, 1108)),
        "sex": FLAG,
        "age": Numeric(0, 99),
        "educ": tuple(str(i) for i in range(1, 17)),
        "income": Numeric(-10_000, 1_000_000),
        "latino": FLAG,
        "black": FLAG,
        "asian": FLAG,
        "married": FLAG,
        "divorced": FLAG,
        "uscitizen": FLAG,
        "children": FLAG,
        "disability": FLAG,
        "militaryservice": FLAG,
        "employed": FLAG,
        "englishability": FLAG,
    },
    ignored=("state", "fips"),
    note="25,766 rows, stratified 80/20 split; natural class balance (about 63 % employed)",
)

MEDICAL = TableSchema(
    name="medical",
    train=DATASETS / "medical" / "medical.csv",
    test=None,
    label="Outcome",
    columns={
        "Gender": ("F", "M"),
        "Age": tuple(f"{10 * i}-{10 * i + 9}" for i in range(10)),
        "Zip": tuple(f"{i:03d}**" for i in range(1000)),
        "Diagnosis": (
            "Alzheimer",
            "Arthritis",
            "COPD",
            "Cancer",
            "Depression",
            "Diabetes",
            "Heart Disease",
            "High Blood Pressure",
            "Osteoporosis",
            "Stroke",
        ),
        "Treatment": tuple(f"{i:03d}" for i in range(100)),
        "Outcome": ("intensive care", "recovered", "unchanged"),
    },
    identifiers=("ID",),
    note="30,000 rows, stratified 80/20 split; 3 classes",
)

TABLES: dict[str, TableSchema] = {t.name: t for t in (ADULT, PUMS, MEDICAL)}
