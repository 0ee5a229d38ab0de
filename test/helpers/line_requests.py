"""The request lines of a long-lived checker (test/helpers/python-server.ts).

Read from a copy of stdin; stdin itself becomes /dev/null, so that no tool a checker starts
(ffmpeg reads keys from its stdin) takes characters of the next request.
"""
import os


def requests():
    lines = os.fdopen(os.dup(0), "r", encoding="utf-8")
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    return lines
