"""Shared by the script tests: puts scripts/ on sys.path and runs argparse
expecting a usage error."""

import contextlib
import io
import os
import sys

SCRIPTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if SCRIPTS not in sys.path:
    sys.path.insert(0, SCRIPTS)


def usage_error(test, parse, argv):
    """Runs parse(argv), expects argparse's exit 2, returns its stderr."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), test.assertRaises(SystemExit) as cm:
        parse(argv)
    test.assertEqual(cm.exception.code, 2)
    return err.getvalue()
