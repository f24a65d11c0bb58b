"""components/changes.py: every consumer reads the edits since its own last read."""

import gc

from mjblend.components import changes


class Block:  # what the edit reports need of a datablock
    def __init__(self, pointer):
        self.pointer = pointer

    def as_pointer(self):
        return self.pointer


def test_each_cursor_reads_every_edit_once_whatever_the_order():
    scan, simulation = changes.Cursor(), changes.Cursor()
    changes.touch(Block(1))
    changes.moved(Block(2))
    assert simulation.read() == ({1}, {2})
    assert simulation.read() == (set(), set())  # read once
    changes.touch(Block(3))
    assert scan.read() == ({1, 3}, {2})  # the simulation's reads took nothing from the scan
    assert simulation.read() == ({3}, set())


def test_a_new_cursor_starts_empty_and_a_dropped_one_stops_collecting():
    changes.touch(Block(7))
    late = changes.Cursor()
    assert late.read() == (set(), set())
    count = len(changes._MOVED)
    del late
    gc.collect()
    assert len(changes._MOVED) == count - 1 and len(changes._TOUCHED) == count - 1
