"""calibre's ebook-convert, kept warm for convertd's process pool (src/process/pool/).

Started by the pool (../calibre-pool.ts) inside the engine sandbox, with its own directory as
working directory. It imports calibre's conversion code once, converts a small sample of its
own so that the code a conversion runs is loaded too, and then serves the pool's JSON lines on
stdin/stdout: {"ready": true}, then one answer per request. Each conversion runs in a child
forked from this warmed process: the child converts and exits, so nothing a file does to
calibre's state reaches the next job, and the job costs calibre's conversion, not its start
(about 0.15 s of CPU instead of 0.7 s for a small book; docs/architecture.md#engines, "Warm process pools").

Why each step is as it is (docs/security.md#calibre):
- The parent never starts Qt: its sample is converted without the default cover, which Qt
  draws. A process whose Qt has started threads cannot be forked safely (a child of it hung on a
  lock another thread held). Before it says it is ready, the helper checks that no Qt
  application exists and that it runs no thread but its own.
- A child has its own process group (killed whole when it ends), the job directory as working
  directory, HOME and temporary directory, and a calibre configuration directory inside it: the
  pool empties the job directory after every job. stdin is /dev/null; stdout (calibre's
  "12% ..." progress, relayed to the pool) and stderr (kept for the error) are its own; the
  pool's pipe is closed in it.
- The helper makes itself non-dumpable, so that a child cannot open its descriptors (the pool's
  pipe) through /proc; the children inherit that.
- Per job, the child lowers its CPU-time limit to the job's; the output cap (RLIMIT_FSIZE) and
  the memory cgroup are the pool process's. A child killed by SIGKILL (the memory cgroup's
  verdict, or the CPU limit's hard stop) ends the helper too, so that the pool reads why.
"""

import ctypes
import os
import re
import resource
import shutil
import signal
import sys
import tempfile
import threading
import traceback

# What calibre's own launcher (/usr/bin/ebook-convert, Debian's) sets before importing calibre.
sys.path.insert(0, "/usr/lib/calibre")
sys.resources_location = "/usr/share/calibre"
sys.extensions_location = "/usr/lib/calibre/calibre/plugins"
sys.executables_location = "/usr/bin"
sys.system_plugins_location = None

STATE = os.getcwd()
JOB = os.path.join(STATE, "job")
# calibre reads its configuration directory's name once, at import: inside the job directory,
# every job starts with none (calibre makes it again as it needs it).
os.environ["CALIBRE_CONFIG_DIRECTORY"] = os.path.join(JOB, "calibre-config")

PR_SET_DUMPABLE = 4
ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)

# The pool's pipe is a descriptor of its own: stray output of calibre's (it prints as it
# converts) goes to /dev/null, never into the protocol.
PROTOCOL = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
DEVNULL = os.open(os.devnull, os.O_RDWR)
os.dup2(DEVNULL, 1)

import pool_protocol  # noqa: E402  (src/process/pool/python/, on PYTHONPATH)
import calibre.ptempfile  # noqa: E402
from calibre.ebooks.conversion.cli import main as ebook_convert  # noqa: E402

PROGRESS = re.compile(rb"^\s*(\d{1,3})% ")
STDERR_KEEP = 16 * 1024


def answer(message):
    pool_protocol.answer(message, PROTOCOL)


def warm_up():
    """Converts a few lines of text to EPUB in this process: the code every conversion runs
    (the plumber, the OEB transforms, an output plugin) is then loaded for each child."""
    folder = os.path.join(STATE, "warm-up")
    os.makedirs(folder, exist_ok=True)
    sample = os.path.join(folder, "sample.txt")
    with open(sample, "w", encoding="utf-8") as f:
        f.write("Warm up\n\nThe helper converts this before its first job.\n")
    saved = os.dup(2)
    os.dup2(DEVNULL, 2)
    try:
        code = ebook_convert(["ebook-convert", sample, os.path.join(folder, "sample.epub"), "--no-default-epub-cover"])
    finally:
        os.dup2(saved, 2)
        os.close(saved)
    if code not in (0, None):
        raise RuntimeError("calibre could not convert the helper's own sample (exit code %s)" % code)
    shutil.rmtree(folder, ignore_errors=True)
    # Its temporary folder is gone with it: a child makes its own, in its job directory.
    calibre.ptempfile._base_dir = None
    qt = sys.modules.get("PyQt6.QtCore")
    if threading.active_count() != 1 or (qt is not None and qt.QCoreApplication.instance() is not None):
        raise RuntimeError("the warm-up started Qt or threads: forking would be unsafe")


def child(request, stdout, stderr):
    """In the forked child: become the job's process and run ebook-convert; never returns."""
    code = 1
    try:
        os.setpgid(0, 0)
        os.dup2(DEVNULL, 0)
        os.dup2(stdout, 1)
        os.dup2(stderr, 2)
        PROTOCOL.close()
        sys.stdout.reconfigure(line_buffering=True)
        sys.stderr.reconfigure(line_buffering=True)
        cpu = int(request["cpu_seconds"])
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
        os.chdir(JOB)
        for name in ("HOME", "TMPDIR", "XDG_RUNTIME_DIR", "XDG_CACHE_HOME"):
            os.environ[name] = JOB
        tempfile.tempdir = JOB
        os.makedirs(os.environ["CALIBRE_CONFIG_DIRECTORY"], mode=0o700, exist_ok=True)
        args = ["./" + os.path.basename(request["input"]), "./" + os.path.basename(request["output"])]
        code = ebook_convert(["ebook-convert", *args, *[str(a) for a in request["args"]]])
        code = 0 if code is None else int(code)
    except SystemExit as error:
        code = error.code if isinstance(error.code, int) else 1
    except BaseException:  # calibre's errors end the child, as they end ebook-convert
        traceback.print_exc()
        code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def convert(request):
    """Forks a child for the request, relays its progress, and answers with its outcome."""
    out_read, out_write = os.pipe()
    errors = tempfile.TemporaryFile(dir=STATE)
    pid = os.fork()
    if pid == 0:
        os.close(out_read)
        child(request, out_write, errors.fileno())
    os.close(out_write)
    status = {}

    def reap():
        status["value"] = os.waitpid(pid, 0)[1]
        # What the child left running in its group goes with it (and closes its end of the pipe).
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    reaper = threading.Thread(target=reap)
    reaper.start()
    with os.fdopen(out_read, "rb") as lines:
        for line in lines:
            match = PROGRESS.match(line)
            if match:
                answer({"id": request.get("id"), "progress": min(int(match.group(1)), 100) / 100})
    reaper.join()
    errors.seek(0, os.SEEK_END)
    errors.seek(max(0, errors.tell() - STDERR_KEEP))
    stderr = errors.read().decode("utf-8", "replace")
    errors.close()
    value = status["value"]
    if os.WIFSIGNALED(value):
        number = os.WTERMSIG(value)
        if number == signal.SIGKILL:
            sys.stderr.write("ebook-convert was killed (SIGKILL): %s\n" % stderr[-300:])
            sys.stderr.flush()
            os._exit(3)
        if number == signal.SIGXFSZ:
            return {"ok": False, "code": "output_too_large", "message": stderr}
        if number == signal.SIGXCPU:
            return {"ok": False, "code": "timeout", "message": stderr}
        return {"ok": False, "code": "conversion_failed", "message": stderr, "result": {"signal": signal.Signals(number).name}}
    code = os.WEXITSTATUS(value)
    if code != 0:
        return {"ok": False, "code": "conversion_failed", "message": stderr, "result": {"exit_code": code}}
    return {"ok": True}


def main():
    warm_up()
    answer({"ready": True})
    for request in pool_protocol.requests():
        reply = {"id": request.get("id")}
        try:
            if request.get("op") == "ping":
                reply["ok"] = True
            elif request.get("op") == "convert":
                reply.update(convert(request))
            else:
                reply.update(ok=False, code="conversion_failed", message="no operation %r" % request.get("op"))
        except Exception as error:  # the Node side decides what an error means
            reply.update(ok=False, code="conversion_failed", message="%s: %s" % (type(error).__name__, error))
        answer(reply)


if __name__ == "__main__":
    main()
