"""Rebuild census_demo.csv from the Fulton County PUMS extract (run from the repo root).

Derivation (deterministic): the first 4,000 rows of ../shared/datasets/pums/fulton_pums.csv,
codes turned into readable values, ethnicity flags folded into one column, and a made-up
`person_id` added so the demo shows how direct identifiers are handled.
"""

import sys
from pathlib import Path

import numpy as np
import pandas as pd

src = Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/datasets/pums/fulton_pums.csv")
df = pd.read_csv(src).head(4000)
rng = np.random.default_rng(20261122)
ethnicity = np.select([df.latino == 1, df.black == 1, df.asian == 1], ["latino", "black", "asian"], "other")
out = pd.DataFrame(
    {
        "person_id": [f"P{n:06d}" for n in rng.permutation(900000)[: len(df)] + 100000],
        "sex": np.where(df.sex == 1, "female", "male"),
        "age": df.age,
        "education_level": df.educ,  # PUMS code 1 (none) .. 16 (doctorate)
        "income": df.income.round().astype("int64"),
        "ethnicity": ethnicity,
        "married": np.where(df.married == 1, "yes", "no"),
        "us_citizen": np.where(df.uscitizen == 1, "yes", "no"),
        "children": df.children,
        "disability": np.where(df.disability == 1, "yes", "no"),
        "speaks_english_well": np.where(df.englishability == 1, "yes", "no"),
        "employed": df.employed,
    }
)
out.to_csv(Path(__file__).with_name("census_demo.csv"), index=False)
print(out.head())
