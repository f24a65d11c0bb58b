"""The fuzz tier runs no bpy in this process (only in its capped child processes):
this file puts the tier's modules on the path and prints its summary."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def pytest_terminal_summary(terminalreporter):
    from test_fuzz import SUMMARY

    if SUMMARY:
        terminalreporter.section("fuzz tier")
        for line in SUMMARY:
            terminalreporter.write_line(line)
