"""Benchmarks of the web side, in one place: ``manage.py bench_console`` and the URLconf
it runs under (with a no-op view to compare tool pages with).  Top layer, beside
``config``: it may import everything and nothing imports it.  The core's own figures
(engine, anchors, calibration, memory) stay in ``environment/bench.py``.
"""
