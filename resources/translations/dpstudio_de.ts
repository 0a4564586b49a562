<?xml version='1.0' encoding='utf-8'?>
<TS version="2.1" language="de_DE">
<context>
    <name />
    <message>
        <location filename="../../dpstudio/gui/charts/attack_chart.py" line="27" />
        <source>How well could an attacker guess the label?</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/charts/attack_chart.py" line="30" />
        <source>ε (log scale)</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/charts/attack_chart.py" line="31" />
        <source>attacker accuracy</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/charts/attack_chart.py" line="35" />
        <source>uses public columns only</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/charts/attack_chart.py" line="36" />
        <source>uses the released label only</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/charts/attack_chart.py" line="37" />
        <source>uses both (best attacker)</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/charts/error_chart.py" line="14" />
        <source>Expected error vs ε — and the best any mechanism could do</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/charts/error_chart.py" line="17" />
        <source>ε (privacy budget, log scale)</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/charts/error_chart.py" line="18" />
        <source>expected error</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/charts/error_chart.py" line="21" />
        <source>floor: no ε-DP mechanism does better</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/charts/error_chart.py" line="25" />
        <source>chosen mechanism</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/charts/error_chart.py" line="39" />
        <source>(log scale)</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/charts/histogram_chart.py" line="13" />
        <source>Original vs privatized values (sample)</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/charts/histogram_chart.py" line="15" />
        <source>share of rows</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/charts/histogram_chart.py" line="19" />
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="174" />
        <source>original</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/charts/histogram_chart.py" line="22" />
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="174" />
        <source>privatized</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/dialogs.py" line="18" />
        <source>Internal error: {0}</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/table_model.py" line="78" />
        <source>(dropped)</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="59" />
        <source>The column shown in the error and histogram charts</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="65" />
        <source>Column</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="65" />
        <source>Mechanism</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="65" />
        <source>Expected error</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="66" />
        <source>Best possible (floor)</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="71" />
        <source>Expected error per released value at the chosen ε, in the column's units (for categories: the chance a value is replaced).</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="83" />
        <source>Run a quick trial fit</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="84" />
        <source>Trains the synthesizer on a small sample to show what the output looks like. Nothing is saved or published.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="87" />
        <source>Cancel</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="93" />
        <source>Synthetic data</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="103" />
        <source>Preview column:</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="169" />
        <source>Synthetic data adds its noise inside the synthesizer, not to each value: see the noise-to-signal ratio and the trial fit below.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="176" />
        <source>Error curves are shown for record, label and semi-sensitive releases with a domain for every released column.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="178" />
        <source>This release adds its noise inside the {0}, not to each value, so there is no per-column error curve; the total privacy loss above is what it spends.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="180" />
        <source>model</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="180" />
        <source>density estimate</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="182" />
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="216" />
        <source>Nothing to preview yet.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="183" />
        <source>Only the {0} is published, never rows.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="184" />
        <source>model's coefficients</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="184" />
        <source>density grid</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="190" />
        <source>error as a share of the range</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="190" />
        <source>chance a value is changed</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="192" />
        <source>Expected error of “{0}” vs ε — and the best any mechanism could do</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="214" />
        <source>Run a quick trial fit (below) to compare the original and the synthetic distribution of “{0}”.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="219" />
        <source>original (sample)</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="219" />
        <source>synthetic (trial)</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="225" />
        <source>1-way distribution of “{0}”: the trial sample vs rows generated by a short trial fit. The real release trains longer.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="236" />
        <source>The attacker chart applies to label and semi-sensitive releases, where public columns are published unchanged next to a protected label.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="241" />
        <source>Attack estimate not available yet in this version.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="247" />
        <source>Mark a label column and at least one public column to estimate what an attacker could infer.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="258" />
        <source>Estimating how well an attacker could guess the label…</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="282" />
        <source>The attack estimate failed: {0}</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="283" />
        <source>Attack estimate cancelled.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="300" />
        <source>At ε = {0:.3g}: best attacker right {1:.0%} of the time; public columns alone {2:.0%}.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="305" />
        <source>{0:.0%} of people are exposed beyond the label guarantee (advantage &gt; 0.1).</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="306" />
        <source>Estimated from the raw data: internal use only.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="325" />
        <source>Drawing a sample of {0} rows…</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="351" />
        <source>{0} of {1} rows, privatized at ε = {2:.3g} for this preview only.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="364" />
        <source>Noise-to-signal ratio of the private summary (embedding): {0:.3g}. Below 0.1 the generator sees the data clearly; above 1 mostly noise.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="369" />
        <source>Noise-to-signal ratio of the private summary: at least &lt;b&gt;{0:.3g}&lt;/b&gt; ({1}). Below 0.1 the generator sees the data clearly; around 1 and above it mostly sees noise.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="373" />
        <source>Computed from public quantities only (ε, δ, the number of rows, the synthesizer settings): noise per coordinate σ = {0:.3g}, times √{1} coordinates, divided by the largest possible size (norm 1) of the embedding. The real embedding is at most that large, so the true ratio is at least this.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="379" />
        <source>The synthesizer adds Gaussian noise to counts of the data (MST: no single embedding, so no noise-to-signal ratio). A trial fit shows the result on a small sample.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="382" />
        <source>The noise-to-signal ratio needs a valid budget (ε and δ &gt; 0). A trial fit shows the result on a small sample.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="392" />
        <source>Training on a sample…</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="398" />
        <source>Training on a sample… {0:.0f} %</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="404" />
        <source>Cancelling…</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="419" />
        <source>Trial fit stopped: {0}</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="420" />
        <source>Trial fit cancelled.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="457" />
        <source>the generator sees the data clearly</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="458" />
        <source>usable, some detail is lost</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="458" />
        <source>mostly noise: raise ε or use more rows</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="508" />
        <source>Trial: trained on {0:,} sampled rows in {1:.1f} s ({2}); {3:,} synthetic rows. Pick a column above to compare its distribution.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_charts.py" line="511" />
        <source>default settings</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_page.py" line="33" />
        <source>strong protection</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_page.py" line="35" />
        <source>moderate protection</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_page.py" line="37" />
        <source>weak protection</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_page.py" line="38" />
        <source>very weak protection</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/review_page.py" line="84" />
        <source>column {0}: domain copied from the private data — {1}</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/review_page.py" line="87" />
        <source>a fixed random seed ({0}) makes the noise reproducible by anyone who knows it: for tests only</source>
        <translation type="unfinished" />
    </message>
</context>
<context>
    <name>BudgetPage</name>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_page.py" line="78" />
        <source>Privacy budget ε</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_page.py" line="80" />
        <source>δ</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_page.py" line="84" />
        <source>more private</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_page.py" line="86" />
        <source>more accurate</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_page.py" line="98" />
        <source>Set a budget cap…</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_page.py" line="99" />
        <source>The most ε this dataset may ever spend over all its releases.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_page.py" line="101" />
        <source>This dataset's budget</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_page.py" line="106" />
        <source>Budget of this release</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_page.py" line="123" />
        <source>Set the privacy budget</source>
        <translation>Privatsphäre-Budget festlegen</translation>
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_page.py" line="126" />
        <source>Move ε and watch the charts: less ε means more privacy and more noise.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_page.py" line="130" />
        <source>The left chart shows the expected error of the selected column at every ε, next to the red floor: no differentially private mechanism can be more accurate than the floor. The histogram compares original and privatized values on a sample (this preview stays on your computer). For label releases, the attacker chart shows how often someone could guess the label from the published data.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_page.py" line="168" />
        <source>this release needs δ &gt; 0; keep it far below 1/n = {0:.1e}</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_page.py" line="170" />
        <source>keep δ far below 1/n = {0:.1e}; 0 = pure ε-DP</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_page.py" line="175" />
        <source>Total privacy loss of this release (computed): &lt;b&gt;ε = {0:.3g}&lt;/b&gt;</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_page.py" line="177" />
        <source>, δ = {0:.1e}</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_page.py" line="180" />
        <source>Total privacy loss: not computable yet — {0}</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_page.py" line="202" />
        <source>Ledger not available yet.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_page.py" line="207" />
        <source>Spent so far: {0} in {1} release(s)</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_page.py" line="208" />
        <source>Cap: {0}</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_page.py" line="208" />
        <source>none set</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_page.py" line="211" />
        <source>Remaining: {0}</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_page.py" line="215" />
        <source>This release needs more than what remains: it will be refused.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_page.py" line="222" />
        <source>Budget cap</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_page.py" line="223" />
        <source>Total ε this dataset may spend over all releases:</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/budget_page.py" line="234" />
        <source>Could not set the cap</source>
        <translation type="unfinished" />
    </message>
</context>
<context>
    <name>ColumnsPage</name>
    <message>
        <location filename="../../dpstudio/gui/wizard/columns_page.py" line="25" />
        <source>Column</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/columns_page.py" line="25" />
        <source>Role</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/columns_page.py" line="25" />
        <source>Type</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/columns_page.py" line="26" />
        <source>Domain (public range / categories)</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/columns_page.py" line="26" />
        <source>Status</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/columns_page.py" line="44" />
        <source>dpstudio suggested a role for every column. Numbers and categories you release need a &lt;b&gt;domain&lt;/b&gt;: the range or category list everyone may know (e.g. age 0–120). Typing it from public knowledge is free; estimating it costs a little ε; copying it from the data leaks.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/columns_page.py" line="52" />
        <source>Classify the columns</source>
        <translation>Spalten einordnen</translation>
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/columns_page.py" line="55" />
        <source>Say what each column is, and give the public range of every column you release.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/columns_page.py" line="58" />
        <source>Roles:</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/columns_page.py" line="78" />
        <source>Suggested: {0} — {1}</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/columns_page.py" line="116" />
        <source>— not needed: released as it is</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/columns_page.py" line="117" />
        <source>⚠ missing: type the public range</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/columns_page.py" line="123" />
        <source>dropped</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/columns_page.py" line="125" />
        <source>Not part of the release.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/columns_page.py" line="127" />
        <source>needs attention</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/columns_page.py" line="131" />
        <source>ready</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/columns_page.py" line="142" />
        <source>✓ Every column is ready.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/columns_page.py" line="143" />
        <source>{0} problem(s) to fix before continuing:</source>
        <translation type="unfinished" />
    </message>
</context>
<context>
    <name>DataPage</name>
    <message>
        <location filename="../../dpstudio/gui/wizard/data_page.py" line="45" />
        <source>Open a table…</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/data_page.py" line="46" />
        <source>Open a CSV, Parquet, Excel, Stata or SAS file (Ctrl+O)</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/data_page.py" line="48" />
        <source>Open a saved recipe…</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/data_page.py" line="49" />
        <source>Continue a release planned earlier (a .recipe.json file)</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/data_page.py" line="51" />
        <source>Try the demo data</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/data_page.py" line="52" />
        <source>A synthetic census extract of 4,000 people</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/data_page.py" line="54" />
        <source>…or drop a file anywhere on this window.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/data_page.py" line="65" />
        <source>Cancel</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/data_page.py" line="75" />
        <source>&lt;b&gt;Recent files&lt;/b&gt;</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/data_page.py" line="83" />
        <source>Column</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/data_page.py" line="83" />
        <source>Type</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/data_page.py" line="83" />
        <source>Missing</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/data_page.py" line="83" />
        <source>Distinct</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/data_page.py" line="83" />
        <source>Suggested role</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/data_page.py" line="101" />
        <source>&lt;b&gt;Columns found&lt;/b&gt;</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/data_page.py" line="106" />
        <source>&lt;b&gt;Preview&lt;/b&gt; (the private data: stays on this computer)</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/data_page.py" line="124" />
        <source>Load your data</source>
        <translation>Daten laden</translation>
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/data_page.py" line="127" />
        <source>Open the table you want to release. It is read on this computer only; nothing leaves it until you export.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/data_page.py" line="131" />
        <source>Open a CSV/TSV, Parquet, Excel, Stata or SAS file with Ctrl+O, by dragging it onto the window, or from the recent files. dpstudio guesses each column's type and role (you can change them in the next step). The table's fingerprint (SHA-256) identifies it in the privacy budget ledger, so renaming the file does not reset its budget.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/data_page.py" line="146" />
        <source>Open a table</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/data_page.py" line="151" />
        <source>Open a recipe</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/data_page.py" line="152" />
        <source>Recipes (*.recipe.json *.json)</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/data_page.py" line="166" />
        <source>Reading {0}…</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/data_page.py" line="201" />
        <source>Could not open the file</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/data_page.py" line="205" />
        <source>Loading cancelled.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/data_page.py" line="238" />
        <source>&lt;b&gt;{0}&lt;/b&gt;: {1} rows × {2} columns ({3}); {4} missing cells. Fingerprint {5}…</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/data_page.py" line="242" />
        <source>Settings loaded from the saved recipe &lt;i&gt;{0}&lt;/i&gt;.</source>
        <translation type="unfinished" />
    </message>
</context>
<context>
    <name>DomainEditor</name>
    <message>
        <location filename="../../dpstudio/gui/wizard/domain_editor.py" line="78" />
        <source>e.g. 0</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/domain_editor.py" line="79" />
        <source>e.g. 120</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/domain_editor.py" line="81" />
        <source>comma-separated, e.g. yes, no</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/domain_editor.py" line="84" />
        <source>optional: category for values not in the list</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/domain_editor.py" line="87" />
        <source>optional: the public list of possible categories</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/domain_editor.py" line="93" />
        <source>The ε spent on estimating this domain; it adds to the release's total.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/domain_editor.py" line="97" />
        <source>Lowest possible value</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/domain_editor.py" line="98" />
        <source>Highest possible value</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/domain_editor.py" line="99" />
        <source>Categories</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/domain_editor.py" line="100" />
        <source>Unlisted values become</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/domain_editor.py" line="101" />
        <source>Search from</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/domain_editor.py" line="102" />
        <source>Search to</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/domain_editor.py" line="103" />
        <source>Candidate categories</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/domain_editor.py" line="104" />
        <source>Privacy cost (ε)</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/domain_editor.py" line="123" />
        <source>Domain</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/domain_editor.py" line="129" />
        <source>Select a column to set its domain.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/domain_editor.py" line="131" />
        <source>This column is dropped: it needs no domain.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/domain_editor.py" line="133" />
        <source>Embedding vectors use a public pool instead of a domain.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/domain_editor.py" line="135" />
        <source>Columns of type {0} cannot be released; set the role to 'Ignore'.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/domain_editor.py" line="138" />
        <source>Domain of “{0}”</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/domain_editor.py" line="166" />
        <source>⚠ Copied from the private data: the exact extremes or rare categories of real people are revealed. The privacy guarantee does NOT cover this, and the report will say so.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/domain_editor.py" line="188" />
        <source>Copy the domain from the private data?</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/domain_editor.py" line="189" />
        <source>The bounds or categories of “{0}” would be read from the private data and published with the release.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/domain_editor.py" line="192" />
        <source>The minimum, maximum and rare categories often belong to one identifiable person. The differential-privacy guarantee does not cover this, and the report records your acknowledgement. Prefer typing public bounds or a DP estimate.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/domain_editor.py" line="196" />
        <source>I understand, copy from the data</source>
        <translation type="unfinished" />
    </message>
</context>
<context>
    <name>ExportPage</name>
    <message>
        <location filename="../../dpstudio/gui/wizard/export_page.py" line="68" />
        <location filename="../../dpstudio/gui/wizard/export_page.py" line="85" />
        <source>Browse…</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/export_page.py" line="74" />
        <source>Protect spreadsheet formulas (cells starting with = + - @ stay text)</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/export_page.py" line="77" />
        <source>Reproducible test run with a fixed seed (never for real releases)</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/export_page.py" line="92" />
        <source>Internal (includes estimates from the raw data)</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/export_page.py" line="93" />
        <source>Public (only what may be published)</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/export_page.py" line="100" />
        <location filename="../../dpstudio/gui/wizard/export_page.py" line="199" />
        <source>Privatized data file</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/export_page.py" line="112" />
        <source>Report for the compliance officer</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/export_page.py" line="113" />
        <source>Report kind</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/export_page.py" line="114" />
        <source>Where to write</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/export_page.py" line="117" />
        <source>Release now</source>
        <translation>Jetzt freigeben</translation>
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/export_page.py" line="119" />
        <source>Draw the noise, write the files and record the spend (Ctrl+E)</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/export_page.py" line="121" />
        <source>Cancel</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/export_page.py" line="133" />
        <source>Open the report</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/export_page.py" line="135" />
        <source>Show the folder</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/export_page.py" line="161" />
        <source>Export the release</source>
        <translation>Freigabe exportieren</translation>
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/export_page.py" line="164" />
        <source>Write the privatized data and the report; the spend is recorded in the budget ledger.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/export_page.py" line="167" />
        <source>Release now draws the random noise, writes the data file and the report, and records the privacy loss in the dataset's ledger. Files are written to a temporary name and renamed at the end, so a cancelled or failed release leaves nothing behind and spends nothing. The internal report includes risk estimates computed from the raw data; give the public variant to anyone outside your organisation.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/export_page.py" line="197" />
        <source>Released model (JSON file)</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/export_page.py" line="198" />
        <source>Released density (JSON file)</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/export_page.py" line="200" />
        <source>This release is a JSON file (coefficients / density grid), not a table.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/export_page.py" line="201" />
        <source>File format of the released table</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/export_page.py" line="217" />
        <source>This release will spend &lt;b&gt;ε = {0:.3g}&lt;/b&gt;{1} from this dataset's budget.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/export_page.py" line="220" />
        <source>Not ready: {0}</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/export_page.py" line="244" />
        <source>Save the privatized data as</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/export_page.py" line="249" />
        <source>Save the report as</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/export_page.py" line="250" />
        <source>Reports (*.html *.pdf)</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/export_page.py" line="256" />
        <source>Release and spend the budget?</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/export_page.py" line="266" />
        <source>This draws the noise and writes {0}. It spends ε = {1:.3g} of this dataset's budget and cannot be undone.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/export_page.py" line="269" />
        <source>{0} already exists and will be replaced.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/export_page.py" line="288" />
        <source>Cancelling…</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/export_page.py" line="298" />
        <source>Done.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/export_page.py" line="301" />
        <source>Released {0} (JSON): &lt;b&gt;{1}&lt;/b&gt;</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/export_page.py" line="302" />
        <source>model</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/export_page.py" line="302" />
        <source>density</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/export_page.py" line="304" />
        <source>Privatized data: &lt;b&gt;{0}&lt;/b&gt;</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/export_page.py" line="307" />
        <source>Density (JSON): &lt;b&gt;{0}&lt;/b&gt;</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/export_page.py" line="309" />
        <source>Report: &lt;b&gt;{0}&lt;/b&gt;</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/export_page.py" line="313" />
        <source>The ledger now records ε = {0:.3g} spent on this dataset in {1} release(s).</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/export_page.py" line="328" />
        <source>The release failed; nothing was written or spent.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/export_page.py" line="331" />
        <source>The release failed</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/export_page.py" line="336" />
        <source>Cancelled: nothing was written or spent.</source>
        <translation type="unfinished" />
    </message>
</context>
<context>
    <name>MainWindow</name>
    <message>
        <location filename="../../dpstudio/gui/main_window.py" line="27" />
        <source>dpstudio — private data release</source>
        <translation>dpstudio — private Datenfreigabe</translation>
    </message>
    <message>
        <location filename="../../dpstudio/gui/main_window.py" line="38" />
        <source>Steps (Alt+Left / Alt+Right or Ctrl+PgUp / Ctrl+PgDn)</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/main_window.py" line="59" />
        <source>◀ Back</source>
        <translation>◀ Zurück</translation>
    </message>
    <message>
        <location filename="../../dpstudio/gui/main_window.py" line="60" />
        <source>Previous step (Alt+Left)</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/main_window.py" line="62" />
        <source>Next ▶</source>
        <translation>Weiter ▶</translation>
    </message>
    <message>
        <location filename="../../dpstudio/gui/main_window.py" line="64" />
        <source>Next step (Alt+Right)</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/main_window.py" line="86" />
        <source>Loading…</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/main_window.py" line="111" />
        <source>&amp;File</source>
        <translation>&amp;Datei</translation>
    </message>
    <message>
        <location filename="../../dpstudio/gui/main_window.py" line="112" />
        <source>&amp;Open a table…</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/main_window.py" line="114" />
        <source>Open a saved &amp;recipe…</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/main_window.py" line="115" />
        <source>&amp;Save the recipe…</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/main_window.py" line="116" />
        <source>Save the release plan (JSON) to repeat it or run it from the command line</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/main_window.py" line="117" />
        <source>Recent files</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/main_window.py" line="119" />
        <source>Open the &amp;demo data</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/main_window.py" line="121" />
        <source>&amp;Export…</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/main_window.py" line="122" />
        <source>Go to the export step and release</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/main_window.py" line="124" />
        <source>&amp;Quit</source>
        <translation>&amp;Beenden</translation>
    </message>
    <message>
        <location filename="../../dpstudio/gui/main_window.py" line="125" />
        <source>&amp;Edit</source>
        <translation>&amp;Bearbeiten</translation>
    </message>
    <message>
        <location filename="../../dpstudio/gui/main_window.py" line="126" />
        <source>&amp;Undo</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/main_window.py" line="127" />
        <source>&amp;Redo</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/main_window.py" line="128" />
        <source>&amp;View</source>
        <translation>&amp;Ansicht</translation>
    </message>
    <message>
        <location filename="../../dpstudio/gui/main_window.py" line="129" />
        <source>Appearance</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/main_window.py" line="132" />
        <source>Follow the system</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/main_window.py" line="132" />
        <source>Light</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/main_window.py" line="133" />
        <source>Dark</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/main_window.py" line="138" />
        <source>&amp;Go</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/main_window.py" line="139" />
        <source>Previous step</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/main_window.py" line="141" />
        <source>Next step</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/main_window.py" line="143" />
        <source>&amp;Help</source>
        <translation>&amp;Hilfe</translation>
    </message>
    <message>
        <location filename="../../dpstudio/gui/main_window.py" line="144" />
        <source>Help on this step</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/main_window.py" line="148" />
        <location filename="../../dpstudio/gui/main_window.py" line="278" />
        <source>About dpstudio</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/main_window.py" line="158" />
        <source>(none yet)</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/main_window.py" line="230" />
        <source>Open a table to begin.</source>
        <translation>Öffnen Sie eine Tabelle, um zu beginnen.</translation>
    </message>
    <message>
        <location filename="../../dpstudio/gui/main_window.py" line="232" />
        <source>{0} thing(s) to fix on this step before continuing (hover for the list).</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/main_window.py" line="235" />
        <source>Fix the problems listed above to continue.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/main_window.py" line="240" />
        <source>Loaded {0}</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/main_window.py" line="250" />
        <source>Finish the earlier steps before exporting.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/main_window.py" line="256" />
        <source>Save the recipe</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/main_window.py" line="257" />
        <source>Recipes (*.recipe.json *.json)</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/main_window.py" line="261" />
        <source>Recipe saved to {0}</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/main_window.py" line="263" />
        <source>Could not save the recipe</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/main_window.py" line="270" />
        <source>Help</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/main_window.py" line="279" />
        <source>&lt;b&gt;dpstudio {0}&lt;/b&gt;&lt;br&gt;Release sensitive tables with differential privacy, with a report a compliance officer can sign.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/main_window.py" line="292" />
        <source>A release is running</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/main_window.py" line="293" />
        <source>Cancel the running release and quit?</source>
        <translation type="unfinished" />
    </message>
</context>
<context>
    <name>ReleasePage</name>
    <message>
        <location filename="../../dpstudio/gui/wizard/release_page.py" line="49" />
        <source>What do you want to release?</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/release_page.py" line="59" />
        <source>(not available yet)</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/release_page.py" line="70" />
        <source>Synthesizer:</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/release_page.py" line="78" />
        <source>Column</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/release_page.py" line="78" />
        <source>Mechanism</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/release_page.py" line="78" />
        <source>Budget share</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/release_page.py" line="79" />
        <source>What it protects — and what it does not</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/release_page.py" line="90" />
        <source>&lt;b&gt;How each released column is protected&lt;/b&gt;</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/release_page.py" line="92" />
        <source>Embedding vectors: where the replacement vectors come from</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/release_page.py" line="95" />
        <source>Each embedding vector is replaced by a vector from a &lt;b&gt;public pool&lt;/b&gt; — a file with the same vector columns, e.g. embeddings of public texts — preferring vectors close to the original.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/release_page.py" line="108" />
        <source>Choose the release</source>
        <translation>Freigabe wählen</translation>
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/release_page.py" line="111" />
        <source>Pick what to publish and how each column is protected.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/release_page.py" line="179" />
        <source>chosen by the synthesizer</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/release_page.py" line="179" />
        <source>part of the model</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/release_page.py" line="185" />
        <source>Relative share of ε: a column with share 2 gets twice the budget (less noise) of a column with share 1.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/release_page.py" line="207" />
        <source>Used to train the synthesizer / model; never published row by row.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/release_page.py" line="210" />
        <source>Copied as it is: protects nothing. Only for information that is already public.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/release_page.py" line="229" />
        <source>Options</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/release_page.py" line="236" />
        <source>How far every row's (scaled) features may reach: rows are shrunk to fit inside this radius. Larger lets the model use more of each row but needs more noise; 1 suits features scaled to their public bounds.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/release_page.py" line="242" />
        <location filename="../../dpstudio/gui/wizard/release_page.py" line="250" />
        <location filename="../../dpstudio/gui/wizard/release_page.py" line="256" />
        <source>automatic</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/release_page.py" line="243" />
        <source>How strongly the coefficients are pulled towards zero (regularisation). Stronger pulling makes the privacy noise smaller but the model simpler. 'automatic' uses dpstudio's default for your table size and ε.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/release_page.py" line="251" />
        <source>How much the density is smoothed, as a share of the column's public range. More smoothing hides single people better and needs less noise, but blurs peaks. 'automatic' follows the usual rule of thumb for the table size.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/release_page.py" line="257" />
        <source>How many points the published density is given at (per axis). More points make a finer picture and a bigger file; they do not cost privacy. 'automatic': 256 for one column, 64 × 64 for two.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/release_page.py" line="263" />
        <source>none (publish the density only)</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/release_page.py" line="264" />
        <source>Optionally also draw this many artificial values from the private density (a table of made-up rows). They cost no extra privacy: they come from the published density, not from the data.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/release_page.py" line="267" />
        <source>Feature radius</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/release_page.py" line="268" />
        <source>Regularisation (λ)</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/release_page.py" line="269" />
        <source>Smoothing (bandwidth)</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/release_page.py" line="270" />
        <source>Grid points</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/release_page.py" line="271" />
        <source>Artificial rows to draw</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/release_page.py" line="282" />
        <source>Model options</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/release_page.py" line="282" />
        <source>Density options</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/release_page.py" line="318" />
        <source>{0} ({1} columns: {2} … {3})</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/release_page.py" line="323" />
        <source>Choose a public pool file…</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/release_page.py" line="324" />
        <source>A CSV or Parquet file of public vectors with the same columns; released vectors are picked from it.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/release_page.py" line="327" />
        <source>Use the dataset's own vectors…</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/release_page.py" line="328" />
        <source>Pick replacements among the other rows of this table. The output then contains other people's real vectors; you will be asked to confirm.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/release_page.py" line="342" />
        <source>⚠ no pool chosen yet</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/release_page.py" line="346" />
        <source>the dataset's own vectors (confirmed: the output contains other people's real vectors)</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/release_page.py" line="350" />
        <source>public pool: {0}</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/release_page.py" line="355" />
        <source>Public pool of vectors for {0}</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/release_page.py" line="356" />
        <source>Tables (*.csv *.parquet)</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/release_page.py" line="371" />
        <source>This file cannot be the pool</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/release_page.py" line="376" />
        <source>Use the dataset's own vectors?</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/release_page.py" line="377" />
        <source>Each vector of &lt;b&gt;{0}&lt;/b&gt; would be replaced by the vector of &lt;b&gt;another row of this table&lt;/b&gt;.&lt;br&gt;&lt;br&gt;The published file then consists of &lt;b&gt;other people's real vectors&lt;/b&gt;: nobody's vector stays in their own row, but every published vector belongs to a real person in your data. Only do this if those vectors may be shown to the readers of the release. A public pool file avoids this.&lt;br&gt;&lt;br&gt;The recipe and the report will record that you accepted this ({1}).</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/release_page.py" line="385" />
        <source>Use the dataset's vectors</source>
        <translation type="unfinished" />
    </message>
</context>
<context>
    <name>ReviewPage</name>
    <message>
        <location filename="../../dpstudio/gui/wizard/review_page.py" line="32" />
        <source>Review before release</source>
        <translation>Vor der Freigabe prüfen</translation>
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/review_page.py" line="35" />
        <source>Check the total privacy cost, the warnings and what you have acknowledged.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/review_page.py" line="38" />
        <source>The total privacy loss is computed from the plan (every mechanism and every DP domain estimate), never typed in. Warnings name residual risks the guarantee does not cover; the report repeats them for the compliance officer.</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/review_page.py" line="120" />
        <source>public columns are released unchanged; the attack estimate has not been computed (open the Budget step to compute it)</source>
        <translation type="unfinished" />
    </message>
    <message>
        <location filename="../../dpstudio/gui/wizard/review_page.py" line="131" />
        <source>at the label's ε an attacker using public columns and the released label guesses it right {0:.0%} of the time (public columns alone: {1:.0%}, released label alone: {2:.0%}) — estimated from the raw data, for internal use only</source>
        <translation type="unfinished" />
    </message>
</context>
</TS>