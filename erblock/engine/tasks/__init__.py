"""Everything that runs inside a worker task: pandas and numpy only, no Dask.

* :mod:`.prepare` — stamp, key and project one input partition; count its blocks (BDM
  rows) or sketch them; sample its records; count its values;
* :mod:`.route` — the rows of a partition for each reduce task that needs them;
* :mod:`.compare` — one reduce task: its match tasks over whole sub-block products;
* :mod:`.score` — a scoring model's phases on a reduce task's pairs, random pairs;
* :mod:`.write` — a reduce task's parquet part, written atomically.

The driver side (:mod:`erblock.engine.execute`, :mod:`erblock.engine.profile`) builds
the graph of these functions. Each is a pure function of its inputs, so Dask can
recompute a lost task and get the same result.
"""
