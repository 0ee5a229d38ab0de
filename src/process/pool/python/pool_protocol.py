"""The pool's JSON-lines protocol (../messaging.ts), for pool helpers written in Python.

A helper prints {"ready": true} once it can work, then reads one request a line on stdin and
answers each with {"id", "ok", ...}, in order; it may send {"id", "progress": f} while it works.
The pool puts this folder on the helper's PYTHONPATH (PYTHON_PROTOCOL in ../messaging.ts):
LibreOffice's and calibre's helpers import it.
"""

import json
import sys


def requests(lines=None):
    """Each request the pool sends, parsed, until its pipe closes; blank lines are skipped."""
    for line in sys.stdin if lines is None else lines:
        line = line.strip()
        if line:
            yield json.loads(line)


def answer(message, stream=None):
    """Writes one message to the pool (stdout unless the helper keeps the pipe elsewhere)."""
    out = sys.stdout if stream is None else stream
    out.write(json.dumps(message) + "\n")
    out.flush()
