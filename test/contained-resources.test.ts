// A conversion reads the upload and nothing else (issue #32): documents that name local files
// and URLs in every way their formats allow, through every writer that embeds what it finds, give
// outputs holding none of them, and no request leaves. The files named: the engine's own
// /proc/self/environ, cmdline and mountinfo; /etc/passwd; the fonts' configuration and our own Lua
// filters (both visible in every pandoc sandbox); a canary file planted in the data directory
// beside the jobs' work directories and one in the host's /tmp (which a conversion could read were
// the OS sandbox off); and a URL of a listener this test runs. pandoc's fence is tried twice: with
// the OS sandbox, and without it (CONVERTD_SANDBOX=off), where only pandoc's own settings and our
// filters stand between the document and those files. Then the other engines' ways in (calibre,
// LibreOffice, librsvg, ImageMagick, ffmpeg), and what the sandbox's /proc and environment show.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { strToU8, unzipSync, zipSync } from 'fflate';
import { runProcess } from '../src/process/runner.ts';
import { configureSandbox, giveToEngineUser } from '../src/process/sandbox.ts';
import { download, fetchCatalogue, submit, submitOk, waitForJob, type ProgressRecord } from './helpers/client.ts';
import { BODY, handmadeDocx, handmadeEpub, MARKER, TITLE } from './helpers/documents.ts';
import { startServer, tempDir, type RunningServer } from './helpers/server.ts';

const FILTER = fileURLToPath(new URL('../src/engines/pandoc/filters/no-external-images.lua', import.meta.url));
/** What the planted files hold: not part of their names, so a reference to one is not a leak of it. */
const CANARY = `Planted${randomBytes(6).toString('hex')}`;
const TMP_CANARY = `/tmp/convertd-contain-${randomBytes(4).toString('hex')}.txt`;
/** A variable of the service's own environment, which must reach no engine. */
const SERVICE_SECRET = `servicesecret${randomBytes(6).toString('hex')}`;
/** A one-pixel PNG as a data: URI: its bytes travel in the upload, so it stays. */
const DATA_PNG = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

let beacon: http.Server;
const beaconHits: string[] = [];

before(async () => {
  beacon = http.createServer((request, response) => {
    beaconHits.push(request.url ?? '');
    response.end(`${CANARY} from the network`);
  });
  await new Promise<void>((resolve) => beacon.listen(0, '127.0.0.1', resolve));
  await fs.writeFile(TMP_CANARY, `${CANARY} in the host's tmp\n`, { mode: 0o644 });
});

after(async () => {
  await Promise.all([started.sandboxed?.then((server) => server.stop()), started.unsandboxed?.then((server) => server.stop())]);
  beacon?.close();
  await fs.rm(TMP_CANARY, { force: true });
});

/** The services, started when a test first needs one, one after the other (each probes every engine). */
const started: { sandboxed?: Promise<RunningServer>; unsandboxed?: Promise<RunningServer> } = {};
const SERVICE_ENV = { CONVERTD_RATE_LIMITS: 'off', CONVERTD_READ_RATE_LIMITS: 'off', CONVERTD_CONCURRENCY: '2', CONVERTD_MAX_ATTEMPTS: '1', CONVERTD_CONTAIN_SECRET: SERVICE_SECRET };
async function service(which: 'sandboxed' | 'unsandboxed'): Promise<RunningServer> {
  started[which] ??= startServer(which === 'sandboxed' ? SERVICE_ENV : { ...SERVICE_ENV, CONVERTD_SANDBOX: 'off' }).then(async (server) => {
    await fs.writeFile(path.join(server.dataDir, 'planted.txt'), `${CANARY} beside the jobs\n`, { mode: 0o644 });
    return server;
  });
  return started[which];
}

const url = (name: string) => `http://127.0.0.1:${(beacon.address() as AddressInfo).port}/${name}`;

/** Every file and URL a hostile document names, as absolute paths, file: URLs, relative paths and a URL. */
function references(server: RunningServer): string[] {
  const planted = path.join(server.dataDir, 'planted.txt');
  return [
    '/proc/self/environ', '/proc/self/cmdline', 'file:///proc/self/mountinfo', '/etc/passwd', '/etc/fonts/fonts.conf', FILTER,
    `file://${FILTER}`, planted, `file://${planted}`, '../../planted.txt', '../../../../../../../../..' + TMP_CANARY, TMP_CANARY, url('beacon.png'),
  ];
}

/**
 * What must never be in an output: the planted files' content, the environment and command line of
 * an engine (its variables, the GHC runtime's options, the job's path), the host's accounts, the
 * fonts' configuration, our filter's source and the service's own variables.
 */
function forbidden(server: RunningServer): Array<string | RegExp> {
  return [CANARY, SERVICE_SECRET, 'PATH=/usr/bin', 'LANG=C.UTF-8', '-M768m', `${server.dataDir}/work/`, /root:x:0:0/, /<cachedir|<fontconfig>/, 'pandoc.mediabag.lookup'];
}

/** Raw HTML naming `ref` every way HTML, SVG and CSS can. */
function htmlReferences(ref: string): string {
  return [
    `<img src="${ref}" alt="raw picture"> <img src='${ref}'> <img src=${ref}> <img srcset="${ref} 2x"> <img alt=">" src="${ref}">`,
    `<link rel="stylesheet" href="${ref}"> <object data="${ref}"></object> <iframe src="${ref}"></iframe> <embed src="${ref}">`,
    `<video poster="${ref}" src="${ref}"></video> <audio src="${ref}"><source src="${ref}"></audio> <video><source src="${ref}" type="video/mp4"></video>`,
    `<p style="background: url(${ref})">styled</p> <span style="background-image:url('${ref}')">styled</span>`,
    `<style>@import "${ref}"; @import url(${ref}); body { background: url("${ref}") }</style>`,
    `<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink"><image href="${ref}"/><image xlink:href="${ref}"/><use href="${ref}#x"/></svg>`,
    `<table background="${ref}"><tr><td>cell</td></tr></table> <input type="image" src="${ref}">`,
  ].join('\n');
}

/** The hostile documents of pandoc's readers: the shared title and sentence, then every way in of the format. */
function hostileMarkup(refs: readonly string[]): Array<{ name: string; text: string }> {
  const [first] = refs;
  const markdownLines = refs.flatMap((ref, n) => [
    `![${MARKER} picture ${n}](${ref})`, `![${MARKER} reference ${n}][ref${n}]`, `[styled]{style="background:url(${ref})" src="${ref}" data="${ref}"}`,
    '', htmlReferences(ref), '', `[ref${n}]: ${ref}`, '',
  ]);
  const markdown = `---\ntitle: ${TITLE}\ncover-image: ${first}\ncss: ${first}\nstylesheet: ${first}\nheader-includes: <img src="${first}"><link rel="stylesheet" href="${first}">\n---\n\n# ${TITLE}\n\n${BODY}\n\n![kept inline picture](${DATA_PNG})\n\n${markdownLines.join('\n')}\n`;
  const html = `<!DOCTYPE html><html><head><title>${TITLE}</title><link rel="stylesheet" href="${first}"><style>@import "${first}";</style></head><body><h1>${TITLE}</h1><p>${BODY}</p>\n${refs.map(htmlReferences).join('\n')}\n</body></html>\n`;
  const latex = `\\documentclass{article}\n\\usepackage{graphicx}\n\\begin{document}\n\\section{${TITLE}}\n${BODY}\n\n${refs.map((ref) => `\\includegraphics{${ref}}\n\n\\input{${ref}}\n\n\\include{${ref}}\n`).join('\n')}\\end{document}\n`;
  const rst = `${TITLE}\n${'='.repeat(TITLE.length)}\n\n${BODY}\n\n${refs.map((ref) => `.. image:: ${ref}\n\n.. figure:: ${ref}\n\n   ${MARKER} caption\n\n.. include:: ${ref}\n\n.. raw:: html\n   :file: ${ref}\n\n.. raw:: html\n\n   <img src="${ref}"><video src="${ref}"></video>\n\n|sub| text\n\n.. |sub| image:: ${ref}\n`).join('\n')}`;
  const org = `#+TITLE: ${TITLE}\n#+SETUPFILE: ${first}\n\n* ${TITLE}\n\n${BODY}\n\n${refs.map((ref) => `#+INCLUDE: "${ref}"\n\n[[file:${ref}]]\n\n[[${ref}][${MARKER} link]]\n\n#+HTML: <img src="${ref}"><video poster="${ref}"></video>\n\n#+BEGIN_EXPORT html\n<audio src="${ref}"></audio>\n#+END_EXPORT\n`).join('\n')}`;
  return [
    { name: 'hostile.md', text: markdown },
    { name: 'hostile.html', text: html },
    { name: 'hostile.tex', text: latex },
    { name: 'hostile.rst', text: rst },
    { name: 'hostile.org', text: org },
  ];
}

/** Every readable text in an output: a package's entries, and whatever base64 (ipynb attachments, data: URIs) decodes to. */
function readable(bytes: Buffer): string {
  const parts: string[] = [];
  if (bytes[0] === 0x50 && bytes[1] === 0x4b) {
    for (const content of Object.values(unzipSync(new Uint8Array(bytes)))) parts.push(Buffer.from(content).toString('latin1'));
  } else {
    parts.push(bytes.toString('utf8'));
  }
  const text = parts.join('\n');
  const decoded = [...text.matchAll(/[A-Za-z0-9+/]{24,}={0,2}/g)].map((match) => Buffer.from(match[0], 'base64').toString('latin1'));
  return [text, ...decoded].join('\n');
}

interface Outcome { bytes?: Buffer; error?: { code: string; message: string }; route: string }

async function convertOn(server: RunningServer, data: Uint8Array | string, filename: string, target: string): Promise<Outcome> {
  const jobId = await submitOk(server.url, typeof data === 'string' ? Buffer.from(data) : data, filename, target);
  const { final } = await waitForJob(server.url, jobId, { timeoutMs: 300_000 });
  const described = await (await fetch(`${server.url}/api/formats/${final.source}/${target}`)).json() as { steps?: string[] };
  const route = (described.steps ?? []).join(' → ');
  if (final.status !== 'done') return { error: final.error, route };
  return { bytes: (await download(server.url, final.download_url!)).bytes, route };
}

/** Asserts the outcome: done (or, where `failures` allows, a clean documented error), the document's own words there, nothing forbidden. */
function checkClean(server: RunningServer, label: string, outcome: Outcome, failures: readonly string[] = []): string | undefined {
  if (!outcome.bytes) {
    assert.ok(failures.includes(outcome.error!.code), `${label} (${outcome.route}): ${JSON.stringify(outcome.error)}`);
    return undefined;
  }
  const text = readable(outcome.bytes);
  for (const pattern of forbidden(server)) {
    if (typeof pattern === 'string') assert.ok(!text.includes(pattern), `${label} (${outcome.route}) holds ${pattern}`);
    else assert.doesNotMatch(text, pattern, `${label} (${outcome.route})`);
  }
  return text;
}

/** Runs jobs two at a time (the services' concurrency), collecting failures rather than stopping at the first. */
async function inTurn<T>(items: readonly T[], work: (item: T) => Promise<void>): Promise<string[]> {
  const failures: string[] = [];
  let next = 0;
  await Promise.all([0, 1].map(async () => {
    while (next < items.length) {
      const item = items[next++]!;
      await work(item).catch((error: unknown) => failures.push(error instanceof Error ? error.message : String(error)));
    }
  }));
  return failures;
}

/** pandoc's writers that embed what they find (run outside pandoc's --sandbox), and the HTML ones and FictionBook (under it). */
const PANDOC_EMBEDDING = ['epub', 'docx', 'odt', 'ipynb'];
const PANDOC_OTHERS = ['fb2', 'html', 'dzslides'];

/**
 * Submits `text` as `name`; a submission refused at once (by its content) must be refused with a
 * documented code, and gives undefined; otherwise the job's final record.
 */
async function finalUnlessRefused(base: string, text: string, name: string, to: string): Promise<ProgressRecord | undefined> {
  const submitted = await submit(base, Buffer.from(text), name, to);
  if (submitted.status !== 200 && submitted.status !== 202) {
    const body = await submitted.json() as { error: { code: string } };
    assert.ok(['unsupported_format', 'corrupt_input', 'unsupported_conversion'].includes(body.error.code), `${name}: ${JSON.stringify(body)}`);
    return undefined;
  }
  const { job_id: jobId } = await submitted.json() as { job_id: string };
  return (await waitForJob(base, jobId)).final;
}

describe('pandoc', () => {
  for (const [label, which] of [['with the OS sandbox', 'sandboxed'], ['with CONVERTD_SANDBOX=off: pandoc\'s own fence alone', 'unsandboxed']] as const) {
    test(`markup naming local files and URLs every way gives outputs holding none of them, ${label}`, { timeout: 15 * 60_000 }, async (t) => {
      const running = await service(which);
      const server = () => running;
      const targets = label.startsWith('with the OS') ? [...PANDOC_EMBEDDING, ...PANDOC_OTHERS] : PANDOC_EMBEDDING;
      const jobs = hostileMarkup(references(server())).flatMap((sample) => targets.filter((to) => !sample.name.endsWith(`.${to}`)).map((to) => ({ ...sample, to })));
      const failures = await inTurn(jobs, async ({ name, text, to }) => {
        const outcome = await convertOn(server(), text, name, to);
        t.diagnostic(`${name} → ${to} (${outcome.route}): ${outcome.bytes ? 'done' : outcome.error!.code}`);
        const shown = checkClean(server(), `${name} → ${to}`, outcome);
        assert.ok(shown!.includes(MARKER), `${name} → ${to}: the document's own words are there`);
        if (name === 'hostile.md' && to === 'epub') {
          // The rule empties references, it does not drop the document's own pictures.
          const pictures = Object.keys(unzipSync(new Uint8Array(outcome.bytes!))).filter((entry) => /\.png$/i.test(entry));
          assert.equal(pictures.length, 1, `the data: picture is carried, nothing else: ${pictures.join(', ')}`);
        }
      });
      assert.deepEqual(failures, [], failures.join('\n'));
      assert.deepEqual(beaconHits, [], 'no request may leave a conversion');
    });
  }

  test('office and ebook uploads linking outside files and URLs (an external image, raw HTML in a chapter) carry none of them', { timeout: 10 * 60_000 }, async (t) => {
    const failures: string[] = [];
    const sandboxed = await service('sandboxed');
    for (const server of [sandboxed, await service('unsandboxed')]) {
      const refs = references(server);
      const uploads: Array<{ name: string; data: Buffer; targets: string[] }> = [];
      for (const ref of refs) {
        uploads.push({ name: 'linked.docx', data: handmadeDocx({ text: `${TITLE}. ${BODY}`, linkedPicture: ref }), targets: ['epub', 'odt', 'md'] });
      }
      uploads.push({ name: 'linked.odt', data: linkedOdt(refs), targets: ['docx', 'epub'] });
      uploads.push({ name: 'linked.epub', data: linkedEpub(refs), targets: ['docx', 'odt'] });
      failures.push(...await inTurn(uploads.flatMap((upload) => upload.targets.map((to) => ({ ...upload, to }))), async ({ name, data, to }) => {
        const outcome = await convertOn(server, data, name, to);
        t.diagnostic(`${name} → ${to} (${outcome.route}, sandbox ${server === sandboxed ? 'on' : 'off'}): ${outcome.bytes ? 'done' : outcome.error!.code}`);
        const shown = checkClean(server, `${name} → ${to}`, outcome);
        assert.ok(shown!.includes(MARKER), `${name} → ${to}: the document's own words are there`);
      }));
    }
    assert.deepEqual(failures, [], failures.join('\n'));
    assert.deepEqual(beaconHits, [], 'no request may leave a conversion');
  });
});

describe('every route', () => {
  /** Targets whose output a text check can read whole (packages are unzipped, PDFs read by pdftotext): preferred as a route's representative. */
  const READABLE = ['txt', 'md', 'html', 'epub', 'docx', 'odt', 'fb2', 'pdf', 'rtf', 'htmlz', 'txtz', 'zip'];

  test('each hostile upload through every route its format has to any target (one target per distinct chain of engines) carries none of what it names', { timeout: 20 * 60_000 }, async (t) => {
    const server = await service('sandboxed');
    const refs = references(server);
    const [markdown, html] = hostileMarkup(refs);
    const uploads: Array<{ name: string; format: string; data: Buffer }> = [
      { name: 'hostile.md', format: 'md', data: Buffer.from(markdown!.text) },
      { name: 'hostile.html', format: 'html', data: Buffer.from(html!.text) },
      { name: 'linked.docx', format: 'docx', data: handmadeDocx({ text: `${TITLE}. ${BODY}`, linkedPicture: `file://${path.join(server.dataDir, 'planted.txt')}` }) },
      { name: 'linked.odt', format: 'odt', data: linkedOdt(refs) },
      { name: 'linked.epub', format: 'epub', data: linkedEpub(refs) },
    ];
    const catalogue = await fetchCatalogue(server.url);
    const jobs: Array<{ name: string; data: Buffer; to: string; route: string }> = [];
    for (const upload of uploads) {
      const byRoute = new Map<string, string[]>();
      for (const to of catalogue.find((entry) => entry.id === upload.format)!.targets) {
        const { steps } = await (await fetch(`${server.url}/api/formats/${upload.format}/${to}`)).json() as { steps: string[] };
        const route = steps.join(' → ');
        byRoute.set(route, [...byRoute.get(route) ?? [], to]);
      }
      assert.ok(byRoute.size >= 2, `${upload.format} reaches its targets through ${byRoute.size} chains of engines`);
      for (const [route, targets] of byRoute) {
        const to = READABLE.find((readableTarget) => targets.includes(readableTarget)) ?? targets[0]!;
        jobs.push({ ...upload, to, route });
      }
    }
    const failures = await inTurn(jobs, async ({ name, data, to, route }) => {
      const outcome = await convertOn(server, data, name, to);
      t.diagnostic(`${name} → ${to} (${route}): ${outcome.bytes ? 'done' : outcome.error!.code}`);
      // Failing cleanly keeps everything out too; a PDF's words are read as text.
      const pdfText = outcome.bytes?.subarray(0, 5).toString('latin1') === '%PDF-' ? execFileSync('pdftotext', ['-enc', 'UTF-8', '-', '-'], { input: outcome.bytes }).toString() : '';
      checkClean(server, `${name} → ${to}`, pdfText ? { ...outcome, bytes: Buffer.from(pdfText) } : outcome, ['conversion_failed', 'corrupt_input']);
    });
    t.diagnostic(`${jobs.length} routes tried`);
    assert.deepEqual(failures, [], failures.join('\n'));
    assert.deepEqual(beaconHits, [], 'no request may leave a conversion');
  });
});

/** An odt (a package of our own making) whose pictures are links to `refs`, not members. */
function linkedOdt(refs: readonly string[]): Buffer {
  const frames = refs.map((ref, n) => `<text:p><draw:frame draw:name="p${n}" svg:width="2cm" svg:height="2cm"><draw:image xlink:href="${ref}" xlink:type="simple" xlink:show="embed" xlink:actuate="onLoad"/></draw:frame></text:p>`).join('');
  const content = `<?xml version="1.0" encoding="UTF-8"?><office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0" xmlns:xlink="http://www.w3.org/1999/xlink" office:version="1.2"><office:body><office:text><text:h text:outline-level="1">${TITLE}</text:h><text:p>${BODY}</text:p>${frames}</office:text></office:body></office:document-content>`;
  const manifest = '<?xml version="1.0" encoding="UTF-8"?><manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.2"><manifest:file-entry manifest:full-path="/" manifest:media-type="application/vnd.oasis.opendocument.text"/><manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/></manifest:manifest>';
  return zipPackage({ mimetype: 'application/vnd.oasis.opendocument.text', 'content.xml': content, 'META-INF/manifest.xml': manifest });
}

/** An EPUB 3 whose one chapter names `refs` in raw HTML and CSS, and whose package names the first as its cover. */
function linkedEpub(refs: readonly string[]): Buffer {
  return handmadeEpub({
    title: TITLE,
    head: `<link rel="stylesheet" href="${refs[0]}"/>`,
    body: `<p>${BODY}</p>${refs.map((ref) => `<img src="${ref}" alt="linked"/><video src="${ref}" poster="${ref}"></video><audio><source src="${ref}"/></audio><p style="background:url(${ref})">styled</p>`).join('')}`,
    metadata: '<meta name="cover" content="cover"/>',
    manifest: `<item id="cover" href="${refs[0]}" media-type="image/png" properties="cover-image"/>`,
  });
}

/** A ZIP package with its mimetype entry first and stored, as ODF and EPUB require. */
function zipPackage(entries: Record<string, string>): Buffer {
  return Buffer.from(zipSync(Object.fromEntries(Object.entries(entries).map(([name, text]) => [name, [strToU8(text), { level: name === 'mimetype' ? 0 : 6 }]]))));
}

describe('the sandbox\'s view of the machine', () => {
  let workDir: string;
  before(async () => {
    const { problem } = configureSandbox('auto');
    assert.equal(problem, undefined, `bubblewrap must work for these tests: ${problem}`);
    workDir = await tempDir('convertd-contain-');
    await fs.chmod(workDir, 0o711);
    await giveToEngineUser(workDir);
    process.env.CONVERTD_CONTAIN_SECRET = SERVICE_SECRET;
  });
  after(async () => {
    configureSandbox('off');
    delete process.env.CONVERTD_CONTAIN_SECRET;
    await fs.rm(workDir, { recursive: true, force: true });
  });

  const look = (procfs?: boolean) => runProcess('/usr/bin/bash', ['-c', 'cat /proc/self/environ | tr "\\0" "\\n"; echo; ls /proc/self/ 2>&1 | head -1; ls /sys 2>&1; echo end'], {
    cwd: workDir, timeoutMs: 10_000, captureStdout: true, ...(procfs === undefined ? {} : { procfs }),
  });

  test('a program given /proc (Node, LibreOffice) sees its own minimal environment there, none of the service\'s variables; no /sys', async () => {
    const { stdout } = await look(true);
    assert.match(stdout, /^PATH=\/usr\/bin:\/bin$/m, 'control: the environment is readable here');
    assert.ok(!stdout.includes(SERVICE_SECRET), 'a variable of the service reached the engine');
    assert.match(stdout, /ls: cannot access '\/sys'/);
  });

  test('every other program (the default: pandoc, ffmpeg, ImageMagick, calibre...) has no environment, command line or mounts there to read', async () => {
    const { stdout } = await look();
    assert.doesNotMatch(stdout, /PATH=/);
    assert.ok(!stdout.includes(workDir), 'the job\'s path is shown');
    assert.match(stdout, /ls: cannot access '\/proc\/self\/'/);
    assert.match(stdout, /ls: cannot access '\/sys'/);
  });
});

/** A picture every engine's sandbox can read (/usr is bound in everywhere). */
const SYSTEM_PICTURE = '/usr/share/calibre/images/default_cover.png';
const SYSTEM_PICTURE_SIZE = '1200x1600';

/** The alpha extremes of a picture's left and right halves (Pillow, not the service's libvips). */
function halves(bytes: Buffer): { left: [number, number]; right: [number, number] } {
  const script = 'import io,json,sys\nfrom PIL import Image\nim=Image.open(io.BytesIO(sys.stdin.buffer.read())).convert("RGBA")\nw,h=im.size\nprint(json.dumps({"left":im.crop((0,0,w//2,h)).getextrema()[3],"right":im.crop((w//2,0,w,h)).getextrema()[3]}))';
  return JSON.parse(execFileSync('/usr/bin/python3', ['-c', script], { input: bytes }).toString()) as { left: [number, number]; right: [number, number] };
}

/** The pictures a PDF holds (poppler's pdfimages: their number and sizes), and its text. */
async function pdfFacts(bytes: Buffer): Promise<{ images: number; sizes: string[]; text: string }> {
  const dir = await tempDir('convertd-contain-pdf-');
  try {
    const file = path.join(dir, 'out.pdf');
    await fs.writeFile(file, bytes);
    const listed = execFileSync('pdfimages', ['-list', file]).toString().trim().split('\n').slice(2).filter(Boolean);
    const sizes = listed.map((line) => line.trim().split(/\s+/).slice(3, 5).join('x'));
    return { images: listed.length, sizes, text: execFileSync('pdftotext', ['-enc', 'UTF-8', file, '-']).toString() };
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
}

describe('the other engines', () => {
  test('calibre: an EPUB naming local files and URLs in its HTML, CSS and package gives books holding none of them', { timeout: 10 * 60_000 }, async (t) => {
    const sandboxed = await service('sandboxed');
    const refs = [...references(sandboxed), SYSTEM_PICTURE];
    const book = linkedEpub(refs);
    const failures = await inTurn(['mobi', 'azw3', 'fb2', 'txt', 'htmlz', 'pdf'], async (to) => {
      const outcome = await convertOn(sandboxed, book, 'linked.epub', to);
      t.diagnostic(`linked.epub → ${to} (${outcome.route}): ${outcome.bytes ? 'done' : outcome.error!.code}`);
      const shown = checkClean(sandboxed, `linked.epub → ${to}`, outcome, ['conversion_failed', 'corrupt_input']);
      if (to === 'pdf' && outcome.bytes) {
        // calibre's PDF has pictures of its own (the cover it draws, Chromium's media controls): none
        // is the machine's picture the book names.
        const { sizes, text } = await pdfFacts(outcome.bytes);
        assert.ok(!sizes.includes(SYSTEM_PICTURE_SIZE), `the PDF holds ${SYSTEM_PICTURE}: ${sizes.join(', ')}`);
        assert.match(text, new RegExp(MARKER));
        for (const pattern of forbidden(sandboxed)) assert.ok(typeof pattern === 'string' ? !text.includes(pattern) : !pattern.test(text), `pdf text holds ${pattern}`);
      } else if (shown && !['mobi', 'azw3'].includes(to)) {
        // (MOBI and AZW3 compress their text: read only for what they must not hold, as bytes.)
        assert.ok(shown.includes(MARKER), `linked.epub → ${to}: the book's own words are there`);
      }
    });
    assert.deepEqual(failures, [], failures.join('\n'));
    assert.deepEqual(beaconHits, [], 'no request may leave a conversion');
  });

  test('LibreOffice: HTML, flat ODF and DOCX linking pictures, frames, sections and fields to local files and URLs embed none of them', { timeout: 10 * 60_000 }, async (t) => {
    const sandboxed = await service('sandboxed');
    const refs = [...references(sandboxed), SYSTEM_PICTURE];
    const html = `<!DOCTYPE html><html><head><title>${TITLE}</title><link rel="stylesheet" href="${refs[0]}"></head><body><h1>${TITLE}</h1><p>${BODY}</p>${refs.map((ref) => `<img src="${ref}" width="64" height="64"><iframe src="${ref}"></iframe><object data="${ref}"></object><p style="background:url(${ref})">styled</p>`).join('')}</body></html>`;
    const fodt = `<?xml version="1.0" encoding="UTF-8"?><office:document xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0" xmlns:xlink="http://www.w3.org/1999/xlink" office:version="1.2" office:mimetype="application/vnd.oasis.opendocument.text"><office:body><office:text><text:h text:outline-level="1">${TITLE}</text:h><text:p>${BODY}</text:p>${refs.map((ref, n) => `<text:p><draw:frame draw:name="f${n}" svg:width="2cm" svg:height="2cm"><draw:image xlink:href="${ref}" xlink:type="simple" xlink:show="embed" xlink:actuate="onLoad"/></draw:frame></text:p><text:section text:name="s${n}"><text:section-source xlink:href="${ref}" xlink:type="simple"/><text:p>section ${n}</text:p></text:section>`).join('')}</office:text></office:body></office:document>`;
    const fieldRun = (instruction: string) => `<w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText xml:space="preserve"> ${instruction} </w:instrText></w:r><w:r><w:fldChar w:fldCharType="separate"/></w:r><w:r><w:t>field</w:t></w:r><w:r><w:fldChar w:fldCharType="end"/></w:r>`;
    const docx = handmadeDocx({ text: `${TITLE}. ${BODY}`, linkedPicture: SYSTEM_PICTURE, runs: refs.map((ref) => fieldRun(`INCLUDEPICTURE "${ref}" \\d`) + fieldRun(`INCLUDETEXT "${ref}"`)).join('') });
    const jobs = [
      ...['pdf', 'odt', 'docx'].map((to) => ({ name: 'linked.html', data: Buffer.from(html), to })),
      ...['pdf', 'docx', 'txt'].map((to) => ({ name: 'linked.fodt', data: Buffer.from(fodt), to })),
      ...['pdf', 'odt'].map((to) => ({ name: 'linked.docx', data: docx, to })),
    ];
    const failures = await inTurn(jobs, async ({ name, data, to }) => {
      const outcome = await convertOn(sandboxed, data, name, to);
      t.diagnostic(`${name} → ${to} (${outcome.route}): ${outcome.bytes ? 'done' : outcome.error!.code}`);
      checkClean(sandboxed, `${name} → ${to}`, outcome);
      if (to === 'pdf') {
        const { images, text } = await pdfFacts(outcome.bytes!);
        assert.equal(images, 0, `${name} → pdf holds a picture the document does not carry`);
        assert.match(text, new RegExp(MARKER));
        for (const pattern of forbidden(sandboxed)) assert.ok(typeof pattern === 'string' ? !text.includes(pattern) : !pattern.test(text), `${name} → pdf text holds ${pattern}`);
      } else {
        const text = readable(outcome.bytes!);
        assert.ok(text.includes(MARKER), `${name} → ${to}: the document's own words are there`);
        if (to !== 'txt') assert.equal(Object.keys(unzipSync(new Uint8Array(outcome.bytes!))).filter((entry) => /\.(png|jpe?g|gif|svg)$/i.test(entry) && !/thumbnail/i.test(entry)).length, 0, `${name} → ${to} holds a picture`);
      }
    });
    assert.deepEqual(failures, [], failures.join('\n'));
    assert.deepEqual(beaconHits, [], 'no request may leave a conversion');
  });

  test('librsvg: an SVG\'s <image> and CSS naming local files, a sibling and a URL draw nothing; its data: picture is drawn', { timeout: 5 * 60_000 }, async () => {
    const sandboxed = await service('sandboxed');
    // (Not input.svg: the upload itself is the one file it may read, and draws its own data: picture.)
    const refs = [...references(sandboxed), SYSTEM_PICTURE, './planted.txt', '../planted.txt', 'step1.png'];
    const images = refs.map((ref) => `<image x="64" y="0" width="64" height="64" href="${ref}"/><image x="64" y="0" width="64" height="64" xlink:href="${ref}"/><rect x="64" y="0" width="64" height="64" style="fill:url(${ref}#p)"/>`).join('');
    const svg = `<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="128" height="64"><style>@import url(${refs[0]});</style><image x="0" y="0" width="64" height="64" href="${DATA_PNG}"/>${images}</svg>`;
    for (const to of ['png', 'pdf']) {
      const outcome = await convertOn(sandboxed, svg, 'linked.svg', to);
      checkClean(sandboxed, `linked.svg → ${to}`, outcome);
      if (to === 'png') {
        const { left, right } = halves(outcome.bytes!);
        assert.ok(left[1] > 0, 'control: the data: picture is drawn');
        assert.equal(right[1], 0, 'a picture named by path or URL was drawn');
      } else {
        // The data: picture is one pixel (pdfimages lists it and its alpha mask): nothing else is there.
        const { sizes } = await pdfFacts(outcome.bytes!);
        assert.ok(sizes.length > 0 && sizes.every((size) => size === '1x1'), `the PDF holds more than the data: picture: ${sizes.join(', ')}`);
      }
    }
    assert.deepEqual(beaconHits, [], 'no request may leave a conversion');
  });

  test('ImageMagick: drawing and scripting coders named as its raster formats read no file', { timeout: 5 * 60_000 }, async () => {
    const sandboxed = await service('sandboxed');
    const mvg = `push graphic-context\nviewbox 0 0 64 64\nimage over 0,0 64,64 '${SYSTEM_PICTURE}'\ntext 0,20 '@/etc/fonts/fonts.conf'\npop graphic-context\n`;
    const msl = `<?xml version="1.0" encoding="UTF-8"?>\n<image><read filename="${SYSTEM_PICTURE}"/><write filename="out.png"/></image>\n`;
    const uploads: Array<[string, string]> = [['drawing.tga', mvg], ['drawing.pcx', mvg], ['script.bmp', msl], ['text.xpm', 'text:/etc/fonts/fonts.conf'], ['label.tga', `label:@${SYSTEM_PICTURE}`]];
    for (const [name, text] of uploads) {
      const final = await finalUnlessRefused(sandboxed.url, text, name, 'png');
      if (!final) continue;
      assert.equal(final.status, 'error', `${name} converted: a drawing or script was run`);
      assert.ok(['corrupt_input', 'unsupported_format', 'conversion_failed'].includes(final.error!.code), `${name}: ${JSON.stringify(final.error)}`);
    }
  });

  test('ffmpeg: playlists, concat scripts and subtitles that name other files or URLs, under media names, open none of them', { timeout: 5 * 60_000 }, async () => {
    const sandboxed = await service('sandboxed');
    const wav = path.join(sandboxed.dataDir, 'planted.wav');
    execFileSync('ffmpeg', ['-nostdin', '-loglevel', 'error', '-f', 'lavfi', '-i', 'sine=frequency=440:duration=1', '-y', wav]);
    const uploads: Array<[string, string, string]> = [
      ['concat.mp3', `ffconcat version 1.0\nfile '${wav}'\nfile '${url('a.wav')}'\n`, 'wav'],
      ['concat.wav', `ffconcat version 1.0\nfile '../../planted.wav'\n`, 'mp3'],
      ['playlist.ts', `#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\n${url('segment.ts')}\n#EXTINF:1,\n${wav}\n#EXT-X-ENDLIST\n`, 'mp4'],
      ['playlist.mp4', `#EXTM3U\n#EXTINF:1,\nfile://${wav}\n`, 'webm'],
      ['list.mkv', `<smil><body><seq><audio src="${wav}"/><video src="${url('v.mp4')}"/></seq></body></smil>\n`, 'mp4'],
      ['subtitles.ass', `[Script Info]\nScriptType: v4.00+\n\n[V4+ Styles]\nFormat: Name, Fontname, Fontsize\nStyle: Default,${wav},20\n\n[Fonts]\nfontname: ${wav}\n\n[Events]\nFormat: Layer, Start, End, Style, Text\nDialogue: 0,0:00:00.00,0:00:01.00,Default,${MARKER} {\\fn${wav}}line\n`, 'srt'],
    ];
    for (const [name, text, to] of uploads) {
      const final = await finalUnlessRefused(sandboxed.url, text, name, to);
      if (!final) continue;
      if (final.status === 'done') {
        // Only a subtitle file may convert, as the text it holds.
        assert.equal(name, 'subtitles.ass', `${name} converted: it read another file`);
        const srt = (await download(sandboxed.url, final.download_url!)).bytes.toString('utf8');
        assert.match(srt, new RegExp(MARKER));
      } else {
        assert.ok(['corrupt_input', 'unsupported_format', 'conversion_failed'].includes(final.error!.code), `${name}: ${JSON.stringify(final.error)}`);
      }
    }
    assert.deepEqual(beaconHits, [], 'no request may leave a conversion');
  });
});

