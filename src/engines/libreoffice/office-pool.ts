// LibreOffice in the warm process pool (src/process/pool/). Each pooled process is a long-lived
// Python helper (helper/libreoffice.py, run by Debian's /usr/bin/python3 for python3-uno) that
// starts its own soffice with a private profile, written fresh from the secure settings below for
// every new process, and converts over UNO. Both run in one sandbox, so killing it takes
// oosplash/soffice.bin along.
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConvertdError } from '../../errors.ts';
import { PYTHON_PROTOCOL, type PooledProgram, type Reply } from '../../process/pool/index.ts';

const PYTHON = '/usr/bin/python3';
const HELPERS = fileURLToPath(new URL('./helper/', import.meta.url));
const SCRIPT = path.join(HELPERS, 'libreoffice.py');
/** Debian keeps LibreOffice's registry under /etc (share/registry is a link to it). */
const LIBREOFFICE_ETC = '/etc/libreoffice';
/** Room for soffice on a big spreadsheet, not for the 3 GB a hostile docx can make it grow to. */
const OFFICE_ADDRESS_SPACE = 6 * 1024 ** 3;

/**
 * The settings of every profile (docs/security.md#libreoffice): macros never run, linked images and other
 * untrusted references are never fetched or embedded, links are never updated on load (Writer:
 * 2 = never; Calc: 1 = never), no auto-save, no recovery data, no update checks, no lock files.
 */
const PROFILE_SETTINGS: ReadonlyArray<[string, string, string]> = [
  ['/org.openoffice.Office.Common/Security/Scripting', 'MacroSecurityLevel', '3'],
  ['/org.openoffice.Office.Common/Security/Scripting', 'DisableMacrosExecution', 'true'],
  ['/org.openoffice.Office.Common/Security/Scripting', 'BlockUntrustedRefererLinks', 'true'],
  ['/org.openoffice.Office.Writer/Content/Update', 'Link', '2'],
  ['/org.openoffice.Office.Calc/Content/Update', 'Link', '1'],
  ['/org.openoffice.Office.Common/Save/Document', 'AutoSave', 'false'],
  ['/org.openoffice.Office.Recovery/AutoSave', 'Enabled', 'false'],
  ['/org.openoffice.Office.Recovery/RecoveryInfo', 'Enabled', 'false'],
  ['/org.openoffice.Office.Common/Misc', 'UseLocking', 'false'],
  ['/org.openoffice.Office.Common/Misc', 'FirstRun', 'false'],
  ['/org.openoffice.Setup/Office', 'ooSetupInstCompleted', 'true'],
];

/**
 * The installed LibreOffice's version ("7.4"), from its registry: a profile that names it as the
 * last version run skips what LibreOffice does at the first start of a version. Of that, the
 * graphics back end's self-test (desktop/source/app/app.cxx, runGraphicsRenderTests, drawing
 * dozens of bitmaps) was about 1.3 s of the 2 s of CPU a fresh soffice took to start here, and
 * every pooled process starts with a fresh profile. Its verdict only chooses between accelerated
 * back ends, and the headless one (svp) has none. Undefined when the registry does not say: the
 * self-test then runs, as before.
 */
let installedVersion: Promise<string | undefined> | undefined;
function libreOfficeVersion(): Promise<string | undefined> {
  installedVersion ??= fs.readFile(path.join(LIBREOFFICE_ETC, 'registry', 'main.xcd'), 'utf8')
    .then((registry) => /oor:name="ooSetupVersion">\s*<value>(\d+\.\d+)<\/value>/.exec(registry)?.[1], () => undefined);
  return installedVersion;
}

function profileXml(version: string | undefined): string {
  const settings = version === undefined ? PROFILE_SETTINGS : [...PROFILE_SETTINGS, ['/org.openoffice.Setup/Product', 'ooSetupLastVersion', version] as const];
  const items = settings.map(([group, name, value]) =>
    `<item oor:path="${group}"><prop oor:name="${name}" oor:op="fuse"><value>${value}</value></prop></item>`);
  return '<?xml version="1.0" encoding="UTF-8"?>\n'
    + '<oor:items xmlns:oor="http://openoffice.org/2001/registry" xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">\n'
    + `${items.join('\n')}\n</oor:items>\n`;
}

export interface OfficeRequest {
  /** Export filter name, e.g. "writer_pdf_Export". */
  readonly filter: string;
  readonly importFilter?: string;
  readonly importOptions?: string;
  /** A FilterOptions string, or FilterData properties. */
  readonly exportOptions?: string | Readonly<Record<string, string | number | boolean>>;
  /**
   * PDF export only: the pages to write, as parsed numbers (options.ts PageRange spans); the helper
   * counts the document's pages and builds the filter's PageRange from them.
   */
  readonly pageSpans?: ReadonlyArray<readonly [number, number | null]>;
  /** PDF export only: the filter's SelectPdfVersion (2 = PDF/A-2b). */
  readonly pdfVersion?: number;
}

/** What the pool runs: the helper, with a fresh profile for every process. */
export function libreOfficeProgram(maxOutputBytes: number): PooledProgram {
  return {
    label: 'LibreOffice',
    logName: 'libreoffice',
    retryAfterCrash: true,
    async prepare(dir) {
      await fs.mkdir(path.join(dir, 'profile', 'user'), { recursive: true, mode: 0o700 });
      await fs.writeFile(path.join(dir, 'profile', 'user', 'registrymodifications.xcu'), profileXml(await libreOfficeVersion()));
    },
    command: (dir) => ({
      program: PYTHON,
      args: [SCRIPT, path.join(dir, 'profile')],
      readOnly: [HELPERS, LIBREOFFICE_ETC, PYTHON_PROTOCOL],
      env: { PYTHONDONTWRITEBYTECODE: '1', SAL_USE_VCLPLUGIN: 'svp', PYTHONPATH: PYTHON_PROTOCOL },
      limits: { fileSizeBytes: maxOutputBytes, addressSpaceBytes: OFFICE_ADDRESS_SPACE },
    }),
    failure: (reply: Reply) => reply.code === 'corrupt_input'
      ? new ConvertdError('corrupt_input', 'LibreOffice could not open the file: check that it is a valid document of its type.')
      : reply.code === 'invalid_option' ? pageRangeFailure(reply)
      : new ConvertdError('conversion_failed', `LibreOffice could not convert the file (${(reply.message ?? 'no detail').slice(0, 300)}).`),
  };
}

/** A page_range past the document's end, as the helper found it ({"result": {"pages": n}}). */
function pageRangeFailure(reply: Reply): ConvertdError {
  const pages = (reply.result as { pages?: unknown } | undefined)?.pages;
  const count = typeof pages === 'number' ? pages : undefined;
  const message = count === undefined ? 'the range selects no page of the document'
    : `the document has ${count} page${count === 1 ? '' : 's'}, and the range selects none of them`;
  return new ConvertdError('invalid_option', `Option "page_range": ${message}.`, { option: 'page_range', reason: 'beyond the last page', ...(count === undefined ? {} : { maximum: count }) });
}

/** The helper's convert message for a filter request. */
export function officeMessage(request: OfficeRequest): Record<string, unknown> {
  return {
    filter: request.filter,
    import_filter: request.importFilter ?? null,
    import_options: request.importOptions ?? null,
    export_options: request.exportOptions ?? null,
    page_spans: request.pageSpans ?? null,
    pdf_version: request.pdfVersion ?? null,
  };
}
