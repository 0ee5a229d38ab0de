// LaTeX → PDF through LuaLaTeX under latexmk (issue #31): every target /api/formats lists for
// latex whose route starts with the latex engine (pdf itself, pdfa through Ghostscript, page
// pictures and a ZIP of pages through poppler) is converted through the HTTP API, and each result
// is read by tools that are not TeX: pdftotext (the source's words, the cross-reference latexmk's
// second run resolves), pdfinfo (pages), pdffonts (embedded fonts, no Type 3), Pillow (a page
// picture carries the black square the source draws; a large CJK glyph is ink, not an empty box).
// Scripts: Japanese, Chinese, Korean, Cyrillic, Greek, Devanagari, Thai, Arabic and Hebrew in a
// plain document with no font named come back as text, drawn in real fonts.
// Hostile (docs/security.md#latex): \input of /etc/passwd, of ../ and of a secret planted at a
// known absolute path, \verbatiminput, \openin/\read and \directlua's io.open of it, \write18,
// \openout outside the work directory, an endless macro, an endless writer and a missing package:
// each ends in a clean error or a PDF without the secret, and nothing is written outside.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { unzipSync } from 'fflate';
import { convert, fetchCatalogue, mapInFlight, submitOk, waitForJob, type CatalogueEntry, type ProgressRecord } from './helpers/client.ts';
import { startServer, type RunningServer } from './helpers/server.ts';
import { decodeImage, writeTemp } from './helpers/tools.ts';

let server: RunningServer;
let catalogue: readonly CatalogueEntry[];
const SECRET = `convertd-secret-${randomBytes(8).toString('hex')}`;
/** Planted on the host at a known absolute path, outside any job's directory. */
const SECRET_FILE = path.join(os.tmpdir(), `convertd-latex-secret-${randomBytes(4).toString('hex')}.tex`);
/** Where a \write18 or \openout that ran would leave a file. */
const MARKER = path.join(os.tmpdir(), `convertd-latex-marker-${randomBytes(4).toString('hex')}`);

before(async () => {
  await fs.writeFile(SECRET_FILE, `${SECRET}\n`);
  // A limit of a minute: ordinary documents take 2-5 s here alone, and up to half a minute when
  // the machine's two cores are shared with other suites.
  server = await startServer({ CONVERTD_RATE_LIMITS: 'off', CONVERTD_ENGINE_TIMEOUTS: 'latex=60' });
  // The same secret beside the jobs' directories, for ../ and ../../.
  await fs.writeFile(path.join(server.dataDir, 'planted.tex'), `${SECRET}\n`);
  await fs.mkdir(path.join(server.dataDir, 'work'), { recursive: true });
  await fs.writeFile(path.join(server.dataDir, 'work', 'planted.tex'), `${SECRET}\n`);
  catalogue = await fetchCatalogue(server.url);
});
after(async () => {
  await server.stop();
  await fs.rm(SECRET_FILE, { force: true });
  await fs.rm(MARKER, { force: true });
});

function tool(program: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(program, args, { maxBuffer: 16 * 1024 * 1024, timeout: 60_000 }, (error, stdout, stderr) => error ? reject(new Error(`${program}: ${stderr || error.message}`)) : resolve(stdout));
  });
}

const pdfText = (file: string) => tool('/usr/bin/pdftotext', ['-enc', 'UTF-8', file, '-']);
async function pdfPages(file: string): Promise<number> {
  return Number(/^Pages:\s+(\d+)/m.exec(await tool('/usr/bin/pdfinfo', [file]))?.[1]);
}
/** pdffonts' rows: name and type. */
async function pdfFonts(file: string): Promise<Array<{ name: string; type: string; embedded: boolean }>> {
  const lines = (await tool('/usr/bin/pdffonts', [file])).split('\n').slice(2).filter(Boolean);
  return lines.map((line) => {
    const type = /(Type 1C|Type 1|Type 3|TrueType|CID Type 0C|CID Type 0|CID TrueType|Type 0C)/.exec(line)?.[1] ?? '?';
    const emb = line.slice(line.indexOf(type) + type.length).trim().split(/\s+/);
    return { name: line.split(/\s+/)[0]!, type, embedded: emb[1] === 'yes' };
  });
}

const tex = (body: string, preamble = '') => Buffer.from(`\\documentclass{article}\n${preamble}\n\\begin{document}\n${body}\n\\end{document}\n`);

/**
 * Two pages: words to find, a black square a picture of page 1 must show, and a reference to a
 * section on page 2 that only a second LuaLaTeX run resolves (latexmk makes it).
 */
const SAMPLE = tex([
  '\\section{Opening}\\label{s:open}',
  'Quokka marmalade paragraph; see Section~\\ref{s:later}.',
  '',
  '\\noindent\\rule{9cm}{9cm}',
  '\\newpage',
  '\\section{Later}\\label{s:later}',
  'Pangolin second page.',
].join('\n'));

/** latex targets whose route starts with the latex engine. */
async function latexTargets(): Promise<Array<{ target: string; steps: string[] }>> {
  const entry = catalogue.find((f) => f.id === 'latex')!;
  const routes = await Promise.all(entry.targets.map(async (target) => {
    const discovery = await (await fetch(`${server.url}/api/formats/latex/${target}`)).json() as { steps: string[] };
    return { target, steps: discovery.steps };
  }));
  return routes.filter((route) => route.steps[0] === 'latex');
}

async function run(bytes: Uint8Array, target = 'pdf', name = 'doc.tex'): Promise<ProgressRecord> {
  const jobId = await submitOk(server.url, bytes, name, target);
  return (await waitForJob(server.url, jobId, { timeoutMs: 120_000 })).final;
}

/** Converts to PDF and returns the file. */
async function typeset(bytes: Uint8Array, name = 'doc.tex'): Promise<string> {
  const { bytes: pdf } = await convert(server.url, bytes, name, 'pdf', { timeoutMs: 120_000 });
  return writeTemp(pdf, 'out.pdf');
}

test('latex → pdf is the latex engine\'s; pdfa and page pictures follow it; pandoc keeps the markup targets', async () => {
  const routes = await latexTargets();
  const byTarget = new Map(routes.map((route) => [route.target, route.steps]));
  assert.deepEqual(byTarget.get('pdf'), ['latex']);
  assert.deepEqual(byTarget.get('pdfa'), ['latex', 'ghostscript']);
  for (const target of ['png', 'jpg']) assert.deepEqual(byTarget.get(target), ['latex', 'poppler'], target);
  const html = await (await fetch(`${server.url}/api/formats/latex/html`)).json() as { steps: string[] };
  assert.deepEqual(html.steps, ['pandoc']);
  const discovery = await (await fetch(`${server.url}/api/formats/latex/pdf`)).json() as { options: unknown[] };
  assert.deepEqual(discovery.options, [], 'the latex edge takes no option');
});

describe('every target reached through the latex engine', () => {
  test('each pair carries the source: its words, pages, the resolved reference, the square', async () => {
    const routes = await latexTargets();
    assert.ok(routes.length >= 7, routes.map((r) => r.target).join(' '));
    await mapInFlight(routes, 2, async ({ target }) => {
      const { bytes } = await convert(server.url, SAMPLE, 'sample.tex', target, { timeoutMs: 180_000 });
      const file = await writeTemp(bytes, `out.${target}`);
      if (target === 'pdf' || target === 'pdfa') {
        const text = await pdfText(file);
        assert.match(text, /Quokka marmalade paragraph/, target);
        assert.match(text, /Pangolin second page/, target);
        assert.match(text, /see Section 2\./, `${target}: the reference is resolved (a second run)`);
        assert.equal(await pdfPages(file), 2, target);
        return;
      }
      if (target === 'zip') {
        const members = Object.entries(unzipSync(bytes)).filter(([name]) => !name.endsWith('/'));
        assert.equal(members.length, 2, `a page each: ${members.map(([name]) => name).join(' ')}`);
        const first = members.sort(([a], [b]) => a.localeCompare(b))[0]!;
        assert.ok(decodeImage(await writeTemp(first[1], path.basename(first[0]))).average < 240, 'page 1 shows the square');
        return;
      }
      // A picture of page 1: the 9 cm black square darkens a white page (about 13 % of a letter page).
      const facts = decodeImage(file);
      assert.ok(facts.average < 240 && facts.average > 150, `${target}: average ${facts.average}`);
      assert.ok(facts.height > facts.width, `${target}: a portrait page, ${facts.width} × ${facts.height}`);
    });
  });
});

describe('scripts come out as text in real fonts', { concurrency: 2 }, () => {
  const SAMPLES: Record<string, string> = {
    Japanese: '日本語のテキスト', Chinese: '中文文本测试', Korean: '한국어 문장', Cyrillic: 'Привет, мир', Greek: 'Καλημέρα κόσμε',
    Devanagari: 'नमस्ते दुनिया', Thai: 'สวัสดีชาวโลก', Arabic: 'مرحبا بالعالم', Hebrew: 'שלום עולם',
  };
  test('a plain document (no font named, no package) in nine scripts', async () => {
    const body = Object.entries(SAMPLES).map(([script, text]) => `${script}: ${text}\\par`).join('\n');
    const pdf = await typeset(tex(body));
    const text = (await pdfText(pdf)).normalize('NFC');
    for (const [script, sample] of Object.entries(SAMPLES)) {
      if (script === 'Arabic' || script === 'Hebrew') {
        // Right-to-left scripts are drawn left to right (README "Known limitations"): every letter
        // is there, in real glyphs, in reverse order.
        const line = text.split('\n').find((l) => l.startsWith(`${script}:`)) ?? '';
        const letters = (s: string) => [...s.replace(/[^\p{L}]/gu, '')].sort().join('');
        assert.equal(letters(line.slice(script.length + 1)), letters(sample), `${script}: ${line}`);
      } else {
        assert.ok(text.includes(sample), `${script}: ${sample} not in ${JSON.stringify(text)}`);
      }
    }
    const fonts = await pdfFonts(pdf);
    assert.ok(fonts.every((font) => font.type !== 'Type 3'), JSON.stringify(fonts));
    assert.ok(fonts.every((font) => font.embedded), JSON.stringify(fonts));
    for (const family of ['LMRoman10', 'NotoSerifCJK', 'NotoSansArabic', 'NotoSansDevanagari', 'NotoSansThai', 'NotoSansHebrew']) {
      assert.ok(fonts.some((font) => font.name.includes(family)), `${family} among ${fonts.map((f) => f.name).join(' ')}`);
    }
  });

  test('a large CJK glyph is ink, not an empty box: the page rendered by pdftoppm, measured by Pillow', async () => {
    const pdf = await typeset(tex('\\pagestyle{empty}\\noindent{\\fontsize{200pt}{220pt}\\selectfont 永}'));
    const prefix = path.join(path.dirname(pdf), 'glyph');
    await tool('/usr/bin/pdftoppm', ['-r', '40', '-gray', '-png', '-singlefile', pdf, prefix]);
    // The dark pixels' bounding box and the share of it that is ink: a missing glyph draws nothing
    // (no box at all), a box drawn in its place is a thin outline (a few per cent of its area);
    // 永's strokes cover a fifth of its square or more.
    const script = [
      'import sys', 'from PIL import Image',
      'im = Image.open(sys.argv[1]).convert("L")',
      'dark = im.point(lambda v: 255 if v < 128 else 0)',
      'box = dark.getbbox()',
      'if box is None: print("none"); sys.exit()',
      'crop = dark.crop(box); hist = crop.histogram()',
      'print(box[2] - box[0], box[3] - box[1], hist[255] / (crop.width * crop.height))',
    ].join('\n');
    const answer = (await tool('/usr/bin/python3', ['-c', script, `${prefix}.png`])).trim();
    assert.notEqual(answer, 'none', 'nothing drawn');
    const [width, height, ink] = answer.split(' ').map(Number) as [number, number, number];
    // 200 pt at 40 dpi: about 110 pixels a side.
    assert.ok(width > 60 && height > 60, `glyph ${width} × ${height}`);
    assert.ok(ink > 0.15, `ink ${ink} of the glyph's box`);
    assert.match(await pdfText(pdf), /永/);
  });

  test('a document that sets its own font with fontspec keeps the fallback', async () => {
    const pdf = await typeset(tex('Latin text and 中文 together.', '\\usepackage{fontspec}\\setmainfont{Noto Serif}'));
    assert.match(await pdfText(pdf), /Latin text and 中文 together\./);
    const fonts = await pdfFonts(pdf);
    assert.ok(fonts.some((f) => f.name.includes('NotoSerif-')) && fonts.some((f) => f.name.includes('NotoSerifCJK')), fonts.map((f) => f.name).join(' '));
  });
});

describe('hostile documents', { concurrency: 3 }, () => {
  /** The job ends in an error with this code, or in a PDF whose text lacks the secret. */
  async function neverLeaks(bytes: Uint8Array, label: string): Promise<ProgressRecord> {
    const final = await run(bytes);
    if (final.status === 'done') {
      const { bytes: pdf } = await fetch(`${server.url}${final.download_url}`).then(async (r) => ({ bytes: Buffer.from(await r.arrayBuffer()) }));
      const text = await pdfText(await writeTemp(pdf, 'out.pdf'));
      assert.ok(!text.includes(SECRET), `${label}: the secret is in the PDF`);
      assert.ok(!pdf.includes(Buffer.from(SECRET)), `${label}: the secret is in the PDF's bytes`);
    } else {
      assert.equal(final.status, 'error', label);
      assert.ok(!JSON.stringify(final.error).includes(SECRET), `${label}: the secret is in the error`);
    }
    return final;
  }

  test('\\input of /etc/passwd, of the planted secret\'s absolute path, of ../ and ../../: LaTeX\'s "not found"', async () => {
    for (const name of ['/etc/passwd', SECRET_FILE, '../planted.tex', '../../planted.tex', '../planted']) {
      const final = await neverLeaks(tex(`Before \\input{${name}} after.`), name);
      assert.equal(final.status, 'error', name);
      assert.equal(final.error!.code, 'corrupt_input', name);
      assert.match(final.error!.message, /LaTeX stopped at an error: .*not found/, name);
    }
  });

  test('\\verbatiminput, \\openin/\\read, \\IfFileExists and \\directlua\'s io.open see no secret', async () => {
    const cases: Record<string, Buffer> = {
      verbatiminput: tex(`\\verbatiminput{${SECRET_FILE}}`, '\\usepackage{verbatim}'),
      'verbatiminput ../': tex('\\verbatiminput{../planted.tex}', '\\usepackage{verbatim}'),
      openin: tex(`\\newread\\r\\openin\\r=${SECRET_FILE} \\ifeof\\r CLOSED\\else\\read\\r to\\x OPEN:\\x\\fi`),
      'openin ../': tex('\\newread\\r\\openin\\r=../planted.tex \\ifeof\\r CLOSED\\else\\read\\r to\\x OPEN:\\x\\fi'),
      IfFileExists: tex(`\\IfFileExists{${SECRET_FILE}}{FOUND}{ABSENT}`),
      directlua: tex(`\\directlua{local f = io.open("${SECRET_FILE}", "r"); if f then tex.print("LUA:" .. f:read("*l")) else tex.print("LUACLOSED") end}`),
      'directlua ../': tex(`\\directlua{local f = io.open("../planted.tex", "r"); if f then tex.print("LUA:" .. f:read("*l")) else tex.print("LUACLOSED") end}`),
    };
    for (const [label, bytes] of Object.entries(cases)) {
      const final = await neverLeaks(bytes, label);
      if (label.startsWith('openin') || label === 'IfFileExists' || label.startsWith('directlua')) {
        assert.equal(final.status, 'done', `${label}: ${JSON.stringify(final.error)}`);
      }
    }
  });

  test('\\write18 and \\immediate\\write18 run nothing; \\openout outside the work directory is refused', async () => {
    // A command that ran would leave a file the document then looks for, and one on the host.
    const pdf = await typeset(tex(`\\immediate\\write18{touch ran.tex; touch ${MARKER}}\\write18{touch ran2.tex}\\IfFileExists{ran.tex}{COMMANDRAN}{NOCOMMAND} next page \\newpage \\IfFileExists{ran2.tex}{COMMANDRAN}{NOCOMMAND}`));
    const text = await pdfText(pdf);
    assert.match(text, /NOCOMMAND/);
    assert.doesNotMatch(text, /COMMANDRAN/);
    await assert.rejects(fs.stat(MARKER), 'no marker on the host');
    for (const target of [MARKER, '../written.tex', '../../written.tex']) {
      const final = await run(tex(`\\newwrite\\w\\immediate\\openout\\w=${target}\\immediate\\write\\w{x}\\immediate\\closeout\\w done`));
      assert.equal(final.status, 'error', target);
      assert.equal(final.error!.code, 'corrupt_input', target);
      assert.match(final.error!.message, /I can't write on file/, target);
    }
    await assert.rejects(fs.stat(MARKER));
    await assert.rejects(fs.stat(path.join(server.dataDir, 'work', 'written.tex')));
    await assert.rejects(fs.stat(path.join(server.dataDir, 'written.tex')));
  });

  test('an endless macro ends at the engine\'s time limit; an endless writer at the output cap', async () => {
    // The loop holds a core until the limit: a service of its own with a limit of 5 s (starting
    // one re-probes LaTeX alone, its verdict keyed by its own limit) rather than a minute of the
    // suite's CPU at the main service's 60 s.
    const limited = await startServer({ CONVERTD_RATE_LIMITS: 'off', CONVERTD_ENGINE_TIMEOUTS: 'latex=5' });
    try {
      const jobId = await submitOk(limited.url, tex('\\def\\x{\\x}\\x'), 'doc.tex', 'pdf');
      const { final: loop } = await waitForJob(limited.url, jobId, { timeoutMs: 120_000 });
      assert.equal(loop.status, 'error');
      assert.equal(loop.error!.code, 'timeout');
      assert.match(loop.error!.message, /latex/i, 'the message names the step that ran out of time');
    } finally {
      await limited.stop();
    }
    const writer = await run(tex('\\newwrite\\f\\immediate\\openout\\f=big.txt\\def\\a{0123456789abcdefghij0123456789abcdefghij0123456789abcdefghij}\\edef\\a{\\a\\a\\a\\a\\a\\a\\a\\a\\a\\a}\\edef\\a{\\a\\a\\a\\a\\a\\a\\a\\a\\a\\a}\\def\\y{\\immediate\\write\\f{\\a}\\y}\\y'));
    assert.equal(writer.status, 'error');
    assert.equal(writer.error!.code, 'output_too_large', JSON.stringify(writer.error));
  });

  test('a missing package and an undefined command end in clean errors', async () => {
    const missing = await run(tex('x', '\\usepackage{nosuchpackage-convertd}'));
    assert.equal(missing.error?.code, 'corrupt_input');
    assert.match(missing.error!.message, /LaTeX stopped at an error: LaTeX Error: File `nosuchpackage-convertd\.sty' not found\./);
    const undefinedCommand = await run(tex('\\nosuchcommandconvertd'));
    assert.equal(undefinedCommand.error?.code, 'corrupt_input');
    assert.match(undefinedCommand.error!.message, /Undefined control sequence/);
  });
});

describe('what an upload of one file lacks', { concurrency: 2 }, () => {
  test('a fragment (no \\documentclass, as pandoc writes without --standalone) is typeset as an article\'s body', async () => {
    const fragment = 'Fragment words here.\n\n\\begin{longtable}[]{@{}rl@{}}\n\\toprule\\noalign{}\nRight & Left \\\\\n\\midrule\\noalign{}\n\\endhead\n12 & \\sout{struck} \\\\\n\\bottomrule\\noalign{}\n\\end{longtable}\n';
    const text = await pdfText(await typeset(Buffer.from(fragment), 'fragment.tex'));
    assert.match(text, /Fragment words here\./);
    assert.match(text, /Right\s+Left/);
    assert.match(text, /struck/);
  });

  test('a picture the document names and the upload cannot carry is drawn as its framed name', async () => {
    const pdf = await typeset(tex('Before the picture. \\includegraphics[width=3cm]{lalune.jpg} \\includegraphics*{figure} After it.', '\\usepackage{graphicx}'));
    const text = await pdfText(pdf);
    assert.match(text, /Before the picture\./);
    assert.match(text, /lalune\.jpg/);
    assert.match(text, /After it\./);
  });
});

test('without the sandbox (CONVERTD_SANDBOX=off) the engine is not offered: its probe sees a file the sandbox would hide, and latex → pdf is pandoc\'s again', async () => {
  const unsandboxed = await startServer({ CONVERTD_RATE_LIMITS: 'off', CONVERTD_SANDBOX: 'off' });
  try {
    const ready = await (await fetch(`${unsandboxed.url}/readyz`)).json() as { engines_unavailable?: Array<{ engine: string; reason: string }> };
    const latex = ready.engines_unavailable?.find((entry) => entry.engine === 'latex');
    assert.ok(latex, JSON.stringify(ready.engines_unavailable));
    assert.match(latex.reason, /only inside the sandbox/);
    const discovery = await (await fetch(`${unsandboxed.url}/api/formats/latex/pdf`)).json() as { steps: string[] };
    assert.ok(!discovery.steps.includes('latex'), discovery.steps.join(' → '));
  } finally {
    await unsandboxed.stop();
  }
});
