"""scripts/history, what changed across revisions and machines in sdpabench's results store
(docs/tracking.md): one entry point (python -m sdpabench_history, which scripts/history runs) and
a module per job:

  cli.py       the subcommands and their options (ingest, runs, changes, margins, flaky, plot, bench)
  store.py     reading the store: every case of its runs as a Point, in run order
  series.py    points grouped into series, one value per revision; what else changed between two
  detect.py    changes and outliers in one short series (the robust detection)
  findings.py  the analyses over every series: changes, outliers, noisy runs, context, margins, flaky
  render.py    the findings as a text table or a JSON list
  page.py      plot's page: index.html (Plotly) and a PNG per charted finding
  bench.py     the detection-power benchmark on synthetic nightly series
  options.py   the argparse types cli.py and bench.py share
"""
