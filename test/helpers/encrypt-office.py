# Saves a document with a password through LibreOffice's UNO API, for the tests' encrypted
# fixtures (Debian's /usr/bin/python3 with python3-uno; the service's own helper starts soffice):
#   python3 encrypt-office.py INPUT OUTPUT FILTER PASSWORD
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src", "engines", "helpers"))
import uno  # noqa: E402
from libreoffice import connect, props, service, start_office  # noqa: E402

source, target, filter_name, password = sys.argv[1:5]
profile = tempfile.mkdtemp(prefix="convertd-encrypt-")
profile_url = uno.systemPathToFileUrl(profile)
office = start_office(profile_url)
try:
    office, context = connect(office, lambda: start_office(profile_url))
    desktop = service(context, "com.sun.star.frame.Desktop")
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
