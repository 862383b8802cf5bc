"""Exports of the metric to the systems where people read numbers.

- :mod:`ettcore.exporters.prometheus`  the Prometheus text exposition format (``ett export prometheus``)
"""
