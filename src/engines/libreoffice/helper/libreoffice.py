"""A long-lived LibreOffice worker for convertd, run with Debian's /usr/bin/python3 (python3-uno).

It starts one soffice with a private profile, connects over a UNO pipe, then converts files on
request, each on soffice's main thread (see MainThreadCall). Requests and answers are JSON lines:
one request on stdin, one answer on stdout (the protocol's reading and writing are shared with
the other Python helpers: src/process/pool/python/pool_protocol.py, on PYTHONPATH).

  {"id": 1, "op": "convert", "input": "/x/in.docx", "output": "/x/out.pdf", "filter": "writer_pdf_Export",
   "import_filter": null, "import_options": null, "export_options": null,
   "page_spans": [[2, 3], [5, null]] or null, "pdf_version": 2 or null}
  {"id": 1, "ok": true}  or  {"id": 1, "ok": false, "code": "corrupt_input", "message": "..."}

page_spans and pdf_version are for the PDF export filters only: numbers, from which this helper
builds the filter's PageRange and SelectPdfVersion itself (no client text ever reaches a filter).
A range past the last page answers {"ok": false, "code": "invalid_option", "result": {"pages": n}}.
  {"id": 2, "op": "ping"} -> {"id": 2, "ok": true}

Anything else the process writes (soffice's own chatter) goes to stderr. The Node side owns
timeouts and kills the whole process group when a request runs too long.
"""
import os
import subprocess
import sys
import threading
import time

import pool_protocol
import uno
import unohelper
from com.sun.star.awt import XCallback
from com.sun.star.beans import PropertyValue
from com.sun.star.connection import NoConnectException

PIPE_NAME = "convertd_lo_%d" % os.getpid()
SOFFICE = "/usr/lib/libreoffice/program/soffice.bin"


def props(**values):
    result = []
    for name, value in values.items():
        item = PropertyValue()
        item.Name = name
        item.Value = value
        result.append(item)
    return tuple(result)


def start_office(profile_url):
    args = [
        SOFFICE,
        "--headless", "--invisible", "--nologo", "--norestore", "--nodefault", "--nolockcheck", "--nofirststartwizard",
        "-env:UserInstallation=" + profile_url,
        "--accept=pipe,name=%s;urp;StarOffice.ComponentContext" % PIPE_NAME,
    ]
    # soffice's output is noise for us; our stdout is the answer channel.
    return subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=sys.stderr, stderr=sys.stderr)


# soffice.bin exits with this code when it wants to be started again (after creating a new
# profile, say); the soffice shell wrapper normally does that for it.
RESTART_REQUESTED = 81


def service(context, name):
    return context.ServiceManager.createInstanceWithContext(name, context)


def connect(office, start, deadline_seconds=60):
    """Waits for soffice to accept the pipe; returns the office process and its component context."""
    resolver = service(uno.getComponentContext(), "com.sun.star.bridge.UnoUrlResolver")
    url = "uno:pipe,name=%s;urp;StarOffice.ComponentContext" % PIPE_NAME
    deadline = time.monotonic() + deadline_seconds
    while True:
        if office.poll() == RESTART_REQUESTED:
            office = start()
        elif office.poll() is not None:
            raise RuntimeError("soffice exited with code %s while starting" % office.returncode)
        try:
            context = resolver.resolve(url)
            return office, context
        except NoConnectException:
            if time.monotonic() > deadline:
                raise RuntimeError("soffice did not accept a connection within %d s" % deadline_seconds)
            time.sleep(0.1)


class MainThreadCall(unohelper.Base, XCallback):
    """Runs a function on soffice's main thread, where `soffice --convert-to` runs its conversions.

    A call that arrives over the UNO bridge runs on one of soffice's bridge threads. Measured here
    (LibreOffice 7.4, a 100-page docx to PDF), the same load and export cost about 10% more CPU
    there than on the main thread: 2.9 s against 2.6 s. AsyncCallback queues notify() on soffice's
    event loop; the bridge keeps thread identity, so the calls notify() makes back into soffice run
    on that main thread.
    """

    def __init__(self, function):
        self.function = function
        self.finished = threading.Event()
        self.result = None
        self.error = None

    def notify(self, _data):
        try:
            self.result = self.function()
        except BaseException as error:  # handed to the waiting thread, which raises it
            self.error = error
        finally:
            self.finished.set()


def on_main_thread(scheduler, office, function):
    call = MainThreadCall(function)
    scheduler.addCallback(call, None)
    # If soffice dies before or while running the callback, notify() never ends: stop waiting.
    while not call.finished.wait(0.25):
        if office.poll() is not None:
            raise RuntimeError("soffice is no longer running")
    if call.error is not None:
        raise call.error
    return call.result


answer = pool_protocol.answer


def bridge_alive(desktop):
    try:
        desktop.getCurrentComponent()  # a round trip through the bridge
        return True
    except Exception:
        return False


def describe(error):
    name = type(error).__name__
    return "%s: %s" % (name, getattr(error, "Message", None) or str(error) or name)


def page_count(document):
    """Pages the PDF export would write: Writer tells its laid-out page count through its
    controller (its getRendererCount answers 0 without a render device); Calc and Impress count
    their print pages and slides through XRenderable."""
    controller = document.getCurrentController()
    if document.supportsService("com.sun.star.text.TextDocument") and controller is not None:
        return int(controller.PageCount)
    return int(document.getRendererCount(document, props(IsPrinter=False)))


def page_range(spans, pages):
    """PageRange text ("2-3,5") of the pages `spans` select out of `pages`, each once, in order; or
    None when they select none. Every figure is an integer the Node side parsed."""
    selected = sorted({page for first, last in spans
                       for page in range(int(first), min(pages if last is None else int(last), pages) + 1)})
    if not selected:
        return None
    runs = []
    for page in selected:
        if runs and runs[-1][1] == page - 1:
            runs[-1][1] = page
        else:
            runs.append([page, page])
    return ",".join(str(a) if a == b else "%d-%d" % (a, b) for a, b in runs)


def convert(desktop, request):
    load = dict(
        Hidden=True,
        ReadOnly=True,
        # Never run macros, never update links (linked sections, DDE, external data) while loading.
        MacroExecutionMode=0,  # com.sun.star.document.MacroExecMode.NEVER_EXECUTE
        UpdateDocMode=0,  # com.sun.star.document.UpdateDocMode.NO_UPDATE
        RepairPackage=False,
        Silent=True,
    )
    if request.get("import_filter"):
        load["FilterName"] = request["import_filter"]
    if request.get("import_options"):
        load["FilterOptions"] = request["import_options"]
    try:
        document = desktop.loadComponentFromURL(uno.systemPathToFileUrl(request["input"]), "_blank", 0, props(**load))
    except Exception as error:  # IOException, IllegalArgumentException: the file did not load
        if not bridge_alive(desktop):
            raise  # not the file: soffice itself died while loading it
        return {"ok": False, "code": "corrupt_input", "message": describe(error)}
    if document is None:
        return {"ok": False, "code": "corrupt_input", "message": "LibreOffice could not open the file"}
    try:
        store = dict(FilterName=request["filter"], Overwrite=True)
        options = request.get("export_options")
        filter_data = dict(options) if isinstance(options, dict) else {}
        if request.get("page_spans"):
            pages = page_count(document)
            selected = page_range(request["page_spans"], pages)
            if selected is None:
                return {"ok": False, "code": "invalid_option", "result": {"pages": pages},
                        "message": "the document has %d page%s, and the range selects none of them" % (pages, "" if pages == 1 else "s")}
            filter_data["PageRange"] = selected
        if request.get("pdf_version") is not None:
            filter_data["SelectPdfVersion"] = int(request["pdf_version"])
        if filter_data:
            store["FilterData"] = uno.Any("[]com.sun.star.beans.PropertyValue", props(**filter_data))
        elif options is not None:
            store["FilterOptions"] = options
        document.storeToURL(uno.systemPathToFileUrl(request["output"]), props(**store))
    finally:
        try:
            document.close(True)
        except Exception:
            document.dispose()
    return {"ok": True}


def exit_when_office_dies(office, closing):
    """Ends this helper when soffice ends by itself, even while no request is waiting, so that
    the pool sees the death at once and replaces the process before the next job needs it."""
    while not closing.wait(0.5):
        if office.poll() is not None and not closing.is_set():
            sys.stderr.write("soffice ended by itself (exit code %s)\n" % office.returncode)
            sys.stderr.flush()
            os._exit(3)


def main():
    profile_url = uno.systemPathToFileUrl(sys.argv[1])
    start = lambda: start_office(profile_url)
    office, context = connect(start(), start)
    desktop = service(context, "com.sun.star.frame.Desktop")
    scheduler = service(context, "com.sun.star.awt.AsyncCallback")
    closing = threading.Event()
    threading.Thread(target=exit_when_office_dies, args=(office, closing), daemon=True).start()
    answer({"ready": True})
    for request in pool_protocol.requests():
        reply = {"id": request.get("id")}
        try:
            if office.poll() is not None:
                raise RuntimeError("soffice is no longer running")
            if request.get("op") == "ping":
                # On the main thread too: a wedged event loop would take every conversion's time.
                reply["ok"] = on_main_thread(scheduler, office, lambda: bridge_alive(desktop))
            else:
                reply.update(on_main_thread(scheduler, office, lambda: convert(desktop, request)))
        except Exception as error:  # the Node side decides what an error means
            reply.update(ok=False, code="conversion_failed", message=describe(error))
            if office.poll() is None and not bridge_alive(desktop):
                # The bridge broke: soffice is on its way out, or hung; make sure it is gone.
                try:
                    office.wait(timeout=2)
                except subprocess.TimeoutExpired:
                    office.kill()
                    office.wait()
            if office.poll() is not None:
                # soffice died under the request: exit, so that the pool replaces this process.
                sys.stderr.write("soffice died: %s\n" % reply["message"])
                sys.exit(3)
        answer(reply)
    closing.set()
    try:
        desktop.terminate()
    except Exception:
        pass
    office.wait(timeout=10)


if __name__ == "__main__":
    main()
