"""The record-column contract of the engine: every ``_erb_*`` column, in one place.

A *prepared* record (:func:`erblock.engine.tasks.prepare.prepare_partition`) has one row
per key pass with a key:

=================  =====================================================================
``ID``             the record's id as the user gave it (index label, or ``id=`` column)
``RID``            record id inside the run: ``input partition << RID_SHIFT | row``,
                   so it orders records in input order
``PART``, ``SRC``  input partition and source (0 = R or the only frame, 1 = S)
``BLOCK``          block id of this pass (mixed with the pass number); ``NULL_BLOCK``
                   for a record with no key in any pass (one row, never routed)
``PASS``           the pass of this row (−1 for the no-key row)
``key_column(p)``  with several passes or a multi-valued pass: pass ``p``'s keys of the
                   record, to decide where a pair is compared once
                   (:mod:`erblock.engine.tasks.keysets`): the raw block id (single-valued),
                   the sorted pass-mixed ids packed in arrow binary (multi-valued), or the
                   position in the order (sorted neighbourhood)
``WINDOW``         with a sorted-neighbourhood pass: the chunk of the row's block in
                   that pass (−1 in rows of other passes); ``key_column(p)`` of such a
                   pass is the record's position in its order (−1: none)
``value_column(i)`` the values of the ``i``-th compared column
=================  =====================================================================

Routing adds ``UNIT`` (the record's unit in the plan), ``TASK`` (the reduce task) and
``RANK`` (the record's rank in a ranked unit, −1 otherwise). User columns may not start
with :data:`PREFIX`.
"""

from __future__ import annotations

PREFIX = "_erb_"
ID = "_erb_id"
RID = "_erb_rid"
PART = "_erb_part"
SRC = "_erb_src"
BLOCK = "_erb_block"
PASS = "_erb_pass"
UNIT = "_erb_unit"
TASK = "_erb_task"
RANK = "_erb_rank"
WINDOW = "_erb_window"

RID_SHIFT = 40  #: a record id is (input partition << RID_SHIFT) | row within the partition


def value_column(i: int) -> str:
    """Prepared column holding the values of the ``i``-th compared column."""
    return f"{PREFIX}v{i}"


def key_column(p: int) -> str:
    """Prepared column holding the raw block id of key pass ``p`` (several passes)."""
    return f"{PREFIX}k{p}"
