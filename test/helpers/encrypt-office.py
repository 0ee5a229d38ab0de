# Saves a document with a password through LibreOffice's UNO API, for the tests' encrypted
# fixtures (Debian's /usr/bin/python3 with python3-uno). It starts its own soffice and imports
# nothing of the service's (the engine's helper stays inside src/engines/libreoffice/):
#   python3 encrypt-office.py INPUT OUTPUT FILTER PASSWORD
import os
import shutil
import subprocess
import sys
import tempfile
import time

import uno
from office_profile import seed_profile
from com.sun.star.beans import PropertyValue
from com.sun.star.connection import NoConnectException

SOFFICE = "/usr/lib/libreoffice/program/soffice.bin"
PIPE_NAME = "convertd_encrypt_%d" % os.getpid()
# soffice.bin exits with this code when it wants to be started again (after creating a profile).
RESTART_REQUESTED = 81


def props(**values):
    result = []
    for name, value in values.items():
        item = PropertyValue()
        item.Name = name
        item.Value = value
        result.append(item)
    return tuple(result)


def start_office(profile_url):
    return subprocess.Popen([
        SOFFICE, "--headless", "--invisible", "--nologo", "--norestore", "--nodefault", "--nolockcheck",
        "-env:UserInstallation=" + profile_url,
        "--accept=pipe,name=%s;urp;StarOffice.ComponentContext" % PIPE_NAME,
    ], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=sys.stderr)


def connect(office, profile_url, deadline_seconds=60):
    local = uno.getComponentContext()
    resolver = local.ServiceManager.createInstanceWithContext("com.sun.star.bridge.UnoUrlResolver", local)
    deadline = time.monotonic() + deadline_seconds
    while True:
        if office.poll() == RESTART_REQUESTED:
            office = start_office(profile_url)
        elif office.poll() is not None:
            raise RuntimeError("soffice exited with code %s while starting" % office.returncode)
        try:
            return office, resolver.resolve("uno:pipe,name=%s;urp;StarOffice.ComponentContext" % PIPE_NAME)
        except NoConnectException:
            if time.monotonic() > deadline:
                raise RuntimeError("soffice did not accept a connection within %d s" % deadline_seconds)
            time.sleep(0.1)


source, target, filter_name, password = sys.argv[1:5]
profile = seed_profile(tempfile.mkdtemp(prefix="convertd-encrypt-"))
profile_url = uno.systemPathToFileUrl(profile)
office = start_office(profile_url)
try:
    office, context = connect(office, profile_url)
    desktop = context.ServiceManager.createInstanceWithContext("com.sun.star.frame.Desktop", context)
    document = desktop.loadComponentFromURL(uno.systemPathToFileUrl(os.path.abspath(source)), "_blank", 0, props(Hidden=True))
    document.storeToURL(uno.systemPathToFileUrl(os.path.abspath(target)), props(FilterName=filter_name, Password=password))
    document.close(True)
    try:
        desktop.terminate()
    except Exception:
        pass  # the bridge closes as soffice goes
    office.wait(timeout=30)
finally:
    # Whatever happened, no soffice and no profile outlive the fixture.
    if office.poll() is None:
        office.kill()
        office.wait()
    shutil.rmtree(profile, ignore_errors=True)
