"""What people read: charts, tables, calendar buckets, the scorecard, the notebook preamble and the report runner.

- :mod:`ettcore.present.charts`     Altair charts (titles, units, legends; SYNTHETIC in every synthetic title)
- :mod:`ettcore.present.tables`     Great Tables with units in the headers
- :mod:`ettcore.present.calendar`   calendar buckets of a trend (day, week, month) and their coverage
- :mod:`ettcore.present.scorecard`  published figures against ettcore's, each with its evidence class
- :mod:`ettcore.present.notebook`   the one-call preamble of every notebook
- :mod:`ettcore.present.report`     running the notebooks with papermill and building the HTML reports
"""
