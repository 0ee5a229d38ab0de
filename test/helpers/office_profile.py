"""A fresh LibreOffice profile for the tests' own soffice starts (office_samples.py, encrypt-office.py).

It names the installed version as the last one run, as the service's pool does
(src/engines/libreoffice/office-pool.ts says why): soffice then skips the graphics self-test of a
version's first start, about 1.3 s of CPU, and does not ask to be started again.
"""
import os
import re


def seed_profile(folder):
    """Writes folder/user/registrymodifications.xcu; returns folder."""
    settings = [("/org.openoffice.Office.Common/Misc", "FirstRun", "false"),
                ("/org.openoffice.Setup/Office", "ooSetupInstCompleted", "true")]
    try:
        with open("/etc/libreoffice/registry/main.xcd", encoding="utf-8") as registry:
            version = re.search(r'oor:name="ooSetupVersion">\s*<value>(\d+\.\d+)</value>', registry.read())
        if version:
            settings.append(("/org.openoffice.Setup/Product", "ooSetupLastVersion", version.group(1)))
    except OSError:
        pass  # the self-test runs, as for any new profile
    os.makedirs(os.path.join(folder, "user"), exist_ok=True)
    items = "\n".join('<item oor:path="%s"><prop oor:name="%s" oor:op="fuse"><value>%s</value></prop></item>' % item for item in settings)
    with open(os.path.join(folder, "user", "registrymodifications.xcu"), "w", encoding="utf-8") as out:
        out.write('<?xml version="1.0" encoding="UTF-8"?>\n<oor:items xmlns:oor="http://openoffice.org/2001/registry" '
                  'xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">\n'
                  + items + "\n</oor:items>\n")
    return folder
