#!/usr/bin/python3
"""Makes the office test samples with LibreOffice itself, started once (not through the service).

    office_samples.py DIR < [[source, filter, output], ...]

Starts one headless soffice with a fresh profile in DIR, converts each source (a path) with the
named export filter into output (a path), and exits. One start for twenty-odd samples: `soffice
--convert-to` would start LibreOffice once per target format, some seconds each on this machine.
Prints nothing; fails with the first conversion that fails.
"""
import json
import os
import subprocess
import sys
import time

import uno
from office_profile import seed_profile
from com.sun.star.beans import PropertyValue
from com.sun.star.connection import NoConnectException


def props(**values):
    result = []
    for name, value in values.items():
        item = PropertyValue()
        item.Name = name
        item.Value = value
        result.append(item)
    return tuple(result)


def main():
    folder = sys.argv[1]
    jobs = json.load(sys.stdin)
    pipe = "convertd_samples_%d" % os.getpid()
    profile = uno.systemPathToFileUrl(seed_profile(os.path.join(folder, "lo-samples-profile")))
    office = subprocess.Popen(
        ["/usr/lib/libreoffice/program/soffice.bin", "--headless", "--invisible", "--nologo", "--norestore",
         "--nodefault", "--nolockcheck", "--nofirststartwizard", "-env:UserInstallation=" + profile,
         "--accept=pipe,name=%s;urp;StarOffice.ComponentContext" % pipe],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        local = uno.getComponentContext()
        resolver = local.ServiceManager.createInstanceWithContext("com.sun.star.bridge.UnoUrlResolver", local)
        deadline = time.monotonic() + 120
        while True:
            if office.poll() == 81:  # a new profile: soffice asks to be started again
                office = subprocess.Popen(office.args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                context = resolver.resolve("uno:pipe,name=%s;urp;StarOffice.ComponentContext" % pipe)
                break
            except NoConnectException:
                if time.monotonic() > deadline:
                    raise RuntimeError("soffice did not start")
                time.sleep(0.2)
        desktop = context.ServiceManager.createInstanceWithContext("com.sun.star.frame.Desktop", context)
        for source, filter_name, output in jobs:
            document = desktop.loadComponentFromURL(uno.systemPathToFileUrl(source), "_blank", 0, props(Hidden=True))
            if document is None:
                raise RuntimeError("soffice could not open %s" % source)
            try:
                document.storeToURL(uno.systemPathToFileUrl(output), props(FilterName=filter_name, Overwrite=True))
            finally:
                document.close(True)
        try:
            desktop.terminate()
        except Exception:
            pass  # the bridge closes as soffice ends
        office.wait(timeout=30)
    finally:
        if office.poll() is None:
            office.kill()


main()
