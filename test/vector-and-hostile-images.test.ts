// SVG through librsvg (to PNG, to PDF, and on through sharp), checked with Pillow and poppler; and
// the hostile images of docs/security.md#imagemagick and #librsvg: external entities, XInclude,
// billion laughs, a huge canvas, a pixel flood, PostScript and MVG in disguise. Each ends in a
// refusal or a documented error, and no output ever holds a local file's content.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { gzipSync } from 'node:zlib';
import { after, before, test } from 'node:test';
import { convert, expectError, fetchCatalogue, mapInFlight, submit, submitOk, waitForJob } from './helpers/client.ts';
import { readdir, readFile, readlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { startServer, tempDir, type RunningServer } from './helpers/server.ts';
import { flatPng, IMAGE_HEIGHT, IMAGE_WIDTH, SAMPLE_SVG, sampleImage } from './helpers/fixtures.ts';
import { renderInChromium } from './helpers/browser-render.ts';
import { compareImages } from './helpers/images.ts';
import { BILEVEL, GREY, luma, MEAN_TOLERANCE, SSIM_AT_LEAST } from './helpers/image-expectations.ts';
import { fileMime, writeTemp } from './helpers/tools.ts';

let server: RunningServer;
before(async () => { server = await startServer({ CONVERTD_RATE_LIMITS: 'off' }); });
after(async () => { await server.stop(); });

const SVG = `<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="120" height="80" viewBox="0 0 120 80">
  <rect width="120" height="80" fill="#2a6"/>
  <text x="10" y="45" font-family="DejaVu Sans" font-size="14" fill="#fff">Hello convertd</text>
</svg>`;

/** The text poppler extracts from a PDF file. */
function pdfText(_bytes: Buffer, file: string): string {
  return execFileSync('pdftotext', [file, '-'], { encoding: 'utf8' });
}

function pdfInfo(file: string): string {
  return execFileSync('pdfinfo', [file], { encoding: 'utf8' });
}

async function finalOf(data: Buffer | string, name: string, target: string) {
  const jobId = await submitOk(server.url, Buffer.from(data), name, target);
  return (await waitForJob(server.url, jobId)).final;
}

/**
 * Shapes at known places on a transparent canvas: a red block, a blue disc, and nothing at all
 * elsewhere. Probes well inside each shape (antialiasing only touches their edges).
 */
const SHAPES = `<svg xmlns="http://www.w3.org/2000/svg" width="120" height="80">
  <rect x="10" y="10" width="40" height="30" fill="#dc1e1e"/>
  <circle cx="90" cy="50" r="20" fill="#1e3cc8"/>
</svg>`;
const PROBES: Array<{ at: [number, number]; colour: 'red' | 'blue' | 'nothing' }> = [
  { at: [30, 25], colour: 'red' }, { at: [90, 50], colour: 'blue' }, { at: [80, 15], colour: 'nothing' }, { at: [20, 65], colour: 'nothing' },
];
const RED = [0xdc, 0x1e, 0x1e];
const BLUE = [0x1e, 0x3c, 0xc8];
/** Per band, 0-255: room for a lossy encoder's error on a flat area, far less than between the colours. */
const COLOUR_TOLERANCE = 12;
/** librsvg against Chromium on the same drawings: text is hinted and antialiased a little differently (0.993 measured). */
const SSIM_OTHER_RENDERER = 0.95;
/** The same drawing, then encoded lossily (JPEG q85, WebP q82). */
const SSIM_OTHER_RENDERER_LOSSY = 0.9;

test('svg → png, webp and jpg draw what Chromium draws, at the declared size, with the shapes where the SVG puts them', async () => {
  const dir = await tempDir();
  const drawings = { text: path.join(dir, 'text.svg'), shapes: path.join(dir, 'shapes.svg') };
  await writeFile(drawings.text, SVG);
  await writeFile(drawings.shapes, SHAPES);
  // An independent rendering of each (librsvg draws for the engine and for ImageMagick alike),
  // while the service converts both drawings to every target.
  const references = renderInChromium([{ file: drawings.text, width: 120, height: 80 }, { file: drawings.shapes, width: 120, height: 80 }]);
  references.catch(() => undefined); // awaited below, after the conversions
  const targets = ['png', 'webp', 'jpg'];
  const outputs = await Promise.all(targets.map((target) => Promise.all(([['text', SVG], ['shapes', SHAPES]] as const).map(async ([name, svg]) => {
    const { bytes } = await convert(server.url, Buffer.from(svg), `${name}.svg`, target);
    return writeTemp(bytes, `${name}.${target}`);
  }))));
  const [textReference, shapesReference] = await references;
  const results = await compareImages(outputs.flatMap(([text, shapes]) => [
    { reference: textReference!, output: text! },
    { reference: shapesReference!, output: shapes!, probes: PROBES.map((p) => p.at) },
  ]));
  for (const [index, target] of targets.entries()) {
    const [text, shapes] = results.slice(2 * index, 2 * index + 2);
    const ssim = target === 'png' ? SSIM_OTHER_RENDERER : SSIM_OTHER_RENDERER_LOSSY;
    for (const [name, result] of [['text', text!], ['shapes', shapes!]] as const) {
      assert.deepEqual([result.output.width, result.output.height], [120, 80], `${name} → ${target}: the declared size`);
      assert.ok(result.ssim! >= ssim, `${name} → ${target}: SSIM against Chromium ${result.ssim} below ${ssim}`);
    }
    // Where nothing is drawn: transparent in PNG and WebP, white in JPEG (flattened, as every
    // target without alpha is).
    for (const [probeIndex, probe] of PROBES.entries()) {
      const [r, g, b, a] = shapes!.probes[probeIndex]!;
      const label = `shapes → ${target} at ${probe.at}`;
      if (probe.colour === 'nothing') {
        if (target === 'jpg') assert.ok(r >= 245 && g >= 245 && b >= 245, `${label}: white, not ${[r, g, b]}`);
        else assert.equal(a, 0, `${label}: transparent`);
      } else {
        const expected = probe.colour === 'red' ? RED : BLUE;
        assert.equal(a, 255, `${label}: opaque`);
        assert.ok([r, g, b].every((v, i) => Math.abs(v - expected[i]!) <= COLOUR_TOLERANCE), `${label}: ${probe.colour}, not ${[r, g, b]}`);
      }
    }
  }
});

test('svg → every other raster target shows the picture svg → png shows (checked against Chromium above)', async (t) => {
  // svg → X is librsvg's PNG, then X's writer: what the second step adds is measured against the
  // service's own svg → png, decoded by Pillow (or another decoder that is not X's writer). The
  // drawing is the raster suites' sample (flat areas, bars, a ramp: no text for a dither to break).
  const catalogue = await fetchCatalogue(server.url);
  const rasters = new Set(catalogue.filter((f) => f.category === 'image').map((f) => f.id));
  const targets = catalogue.find((f) => f.id === 'svg')!.targets.filter((id) => rasters.has(id) && !['png', 'webp', 'jpg'].includes(id));
  assert.ok(targets.length >= 25, `svg reaches ${targets.length} other raster targets`);
  const reference = await writeTemp((await convert(server.url, Buffer.from(SAMPLE_SVG), 'drawing.svg', 'png')).bytes, 'drawing.png');
  const outputs = await Promise.all(targets.map(async (target) => writeTemp((await convert(server.url, Buffer.from(SAMPLE_SVG), 'drawing.svg', target)).bytes, `drawing.${target}`)));
  const results = await compareImages(outputs.map((output, index) => ({ reference, output, mode: BILEVEL.has(targets[index]!) ? 'bilevel' as const : 'colour' as const })));
  t.diagnostic(targets.map((target, index) => `${target} ${results[index]!.ssim?.toFixed(4)}`).join(', '));
  for (const [index, target] of targets.entries()) {
    const result = results[index]!;
    assert.deepEqual([result.output.width, result.output.height], [IMAGE_WIDTH, IMAGE_HEIGHT], `svg → ${target}: the declared size`);
    assert.ok(result.ssim! >= SSIM_AT_LEAST[target]!, `svg → ${target}: SSIM ${result.ssim} below ${SSIM_AT_LEAST[target]}`);
    const bands = GREY.has(target) ? [luma(result.output.means) - luma(result.reference!.means)] : [0, 1, 2].map((band) => result.output.means[band]! - result.reference!.means[band]!);
    assert.ok(bands.every((difference) => Math.abs(difference) <= MEAN_TOLERANCE), `svg → ${target}: colours moved by ${bands}`);
  }
});

test('svg → pdf is a one-page PDF of the drawing\'s size, with its text', async () => {
  const { bytes } = await convert(server.url, Buffer.from(SVG), 'drawing.svg', 'pdf');
  const file = await writeTemp(bytes, 'out.pdf');
  assert.equal(fileMime(file), 'application/pdf');
  const info = pdfInfo(file);
  assert.match(info, /^Pages:\s+1$/m);
  assert.match(info, /^Page size:\s+90 x 60 pts/m); // 120 x 80 px at 96 dpi
  assert.match(pdfText(bytes, file), /Hello convertd/);

  // The shapes where the SVG puts them, as poppler renders the page at 96 dpi (on white paper).
  const shapes = await writeTemp((await convert(server.url, Buffer.from(SHAPES), 'shapes.svg', 'pdf')).bytes, 'shapes.pdf');
  execFileSync('pdftoppm', ['-png', '-singlefile', '-r', '96', shapes, shapes.replace(/\.pdf$/, '')]);
  const [page] = await compareImages([{ output: shapes.replace(/\.pdf$/, '.png'), probes: PROBES.map((p) => p.at) }]);
  assert.deepEqual([page!.output.width, page!.output.height], [120, 80]);
  for (const [index, probe] of PROBES.entries()) {
    const expected = probe.colour === 'red' ? RED : probe.colour === 'blue' ? BLUE : [255, 255, 255];
    const found = page!.probes[index]!.slice(0, 3);
    assert.ok(found.every((v, i) => Math.abs(v - expected[i]!) <= COLOUR_TOLERANCE), `shapes → pdf at ${probe.at}: ${probe.colour}, not ${found}`);
  }
});

test('svg → eps and ps are PostScript with the drawing\'s bounding box', async () => {
  for (const target of ['eps', 'ps']) {
    const { bytes, response } = await convert(server.url, Buffer.from(SVG), 'drawing.svg', target);
    assert.equal(response.headers.get('content-type'), 'application/postscript');
    const file = await writeTemp(bytes, `out.${target}`);
    assert.equal(fileMime(file), 'application/postscript');
    const text = bytes.toString('latin1');
    assert.match(text, target === 'eps' ? /^%!PS-Adobe-3\.0 EPSF/ : /^%!PS-Adobe-3\.0/);
    assert.match(text, /%%BoundingBox: 0 0 90 60/);
  }
});

test('an SVG external entity or XInclude never brings a local file into the output', async () => {
  const xxe = `<?xml version="1.0"?><!DOCTYPE svg [<!ENTITY leak SYSTEM "file:///etc/passwd">]>
<svg xmlns="http://www.w3.org/2000/svg" width="400" height="100"><text x="5" y="50" font-size="10">&leak;</text></svg>`;
  const xinclude = `<svg xmlns="http://www.w3.org/2000/svg" xmlns:xi="http://www.w3.org/2001/XInclude" width="400" height="100">
<text x="5" y="50" font-size="10"><xi:include href="/etc/passwd" parse="text"/></text></svg>`;
  for (const [name, svg] of [['xxe.svg', xxe], ['xinclude.svg', xinclude]] as const) {
    const final = await finalOf(svg, name, 'pdf');
    if (final.status === 'done') {
      const { bytes } = await (async () => {
        const response = await fetch(`${server.url}${final.download_url}`);
        return { bytes: Buffer.from(await response.arrayBuffer()) };
      })();
      const file = await writeTemp(bytes, 'out.pdf');
      assert.doesNotMatch(pdfText(bytes, file), /root:/, `${name} leaked /etc/passwd`);
    } else {
      assert.ok(['corrupt_input', 'conversion_failed', 'input_too_complex'].includes(final.error!.code), final.error!.code);
    }
  }
});

test('billion laughs and a 30000 x 30000 canvas end in input_too_complex or corrupt_input', async () => {
  const laughs = `<?xml version="1.0"?><!DOCTYPE svg [
<!ENTITY a "lol"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">
<!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;"><!ENTITY e "&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;"><!ENTITY f "&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;">
<!ENTITY g "&f;&f;&f;&f;&f;&f;&f;&f;&f;&f;"><!ENTITY h "&g;&g;&g;&g;&g;&g;&g;&g;&g;&g;">]>
<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><text>&h;</text></svg>`;
  const laughing = await finalOf(laughs, 'laughs.svg', 'png');
  assert.equal(laughing.status, 'error');
  assert.ok(['input_too_complex', 'corrupt_input'].includes(laughing.error!.code), laughing.error!.code);

  const huge = '<svg xmlns="http://www.w3.org/2000/svg" width="30000" height="30000"><rect width="30000" height="30000"/></svg>';
  const flooded = await finalOf(huge, 'huge.svg', 'png');
  assert.equal(flooded.error?.code, 'input_too_complex');
});

test('a pixel flood (a 50000 x 50000 PNG of a few kilobytes) is refused before decoding', async () => {
  const flood = flatPng(50000, 50000, 1);
  assert.ok(flood.length < 200_000);
  const final = await finalOf(flood, 'flood.png', 'webp');
  assert.equal(final.error?.code, 'input_too_complex');
});

test('a GIF frame bomb (thousands of frames in a small file) is refused before decoding', async () => {
  const dir = await tempDir();
  const file = `${dir}/bomb.gif`;
  execFileSync('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-f', 'lavfi', '-i', 'color=c=red:size=16x16:rate=100:duration=12', file]);
  const bomb = await readFile(file);
  const final = await finalOf(bomb, 'bomb.gif', 'webp'); // animated → animated: every frame would be decoded
  assert.equal(final.error?.code, 'input_too_complex');
  assert.match(final.error!.message, /frames/);
});

test('PostScript named .tga or .jpg is taken as PostScript by its content (Ghostscript, never an image decoder); garbage named .tga is read as TGA and fails', async () => {
  const postscript = '%!PS-Adobe-3.0\n/Helvetica findfont 12 scalefont setfont 72 72 moveto (hello) show showpage\n';
  for (const name of ['picture.tga', 'photo.jpg']) {
    const final = await finalOf(postscript, name, 'png');
    assert.equal(final.source, 'ps');
    assert.equal(final.status, 'done', JSON.stringify(final.error));
  }
  // TGA has no signature: a file named .tga goes to ImageMagick's TGA coder, named explicitly,
  // which can only fail on what is not a TGA.
  const final = await finalOf('this is not an image at all, just text pretending\n'.repeat(20), 'picture.tga', 'png');
  assert.equal(final.status, 'error');
  assert.ok(['corrupt_input', 'conversion_failed', 'input_too_complex'].includes(final.error!.code), final.error!.code);

  const mvg = 'push graphic-context\nviewbox 0 0 64 64\nimage over 0,0 0,0 "label:@/etc/passwd"\npop graphic-context\n';
  await expectError(await submit(server.url, Buffer.from(mvg), 'exploit.png', 'jpg'), 415, 'unsupported_format');
});

test('images are decoded in sandboxed sharp processes, never in the service itself', async () => {
  const { record } = await convert(server.url, await sampleImage('png'), 'photo.png', 'webp');
  assert.equal(record.status, 'done');
  const servicePid = server.child.pid!;
  // The service has no libvips mapped: sharp is never loaded there.
  assert.doesNotMatch(await readFile(`/proc/${servicePid}/maps`, 'utf8'), /libvips/);
  // The processes that have it work in the service's data dir, in bubblewrap's mount namespace, as nobody when we are root.
  const ownNamespace = await readlink(`/proc/${servicePid}/ns/mnt`);
  const decoders: Array<{ uid: number; namespace: string }> = [];
  for (const pid of (await readdir('/proc')).filter((name) => /^\d+$/.test(name))) {
    const cwd = await readlink(`/proc/${pid}/cwd`).catch(() => '');
    if (!cwd.startsWith(server.dataDir)) continue;
    if (!(await readFile(`/proc/${pid}/maps`, 'utf8').catch(() => '')).includes('libvips')) continue;
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    decoders.push({ uid: Number(/^Uid:\s+(\d+)/m.exec(status)?.[1]), namespace: await readlink(`/proc/${pid}/ns/mnt`) });
  }
  assert.ok(decoders.length >= 1, 'a sharp process of this service runs');
  for (const decoder of decoders) {
    assert.notEqual(decoder.namespace, ownNamespace, 'the sharp process is in a sandbox of its own');
    if (process.getuid?.() === 0) assert.equal(decoder.uid, 65534, 'the sharp process runs as nobody');
  }
});

test('an SVG whose <use> references multiply to a billion shapes ends quickly in a documented error, and the next SVG renders', async () => {
  const levels = ['<rect id="l0" width="1" height="1"/>'];
  for (let level = 1; level <= 9; level++) {
    levels.push(`<g id="l${level}">${Array.from({ length: 10 }, () => `<use href="#l${level - 1}"/>`).join('')}</g>`);
  }
  const bomb = `<svg xmlns="http://www.w3.org/2000/svg" width="100" height="100"><defs>${levels.join('')}</defs><use href="#l9"/></svg>`;
  const started = Date.now();
  const final = await finalOf(bomb, 'use-bomb.svg', 'png');
  if (final.status === 'error') assert.ok(['input_too_complex', 'corrupt_input', 'conversion_failed', 'timeout'].includes(final.error!.code), JSON.stringify(final.error));
  assert.ok(Date.now() - started < 60_000, 'it ended within the engine\'s limit');
  const { record } = await convert(server.url, Buffer.from(SVG), 'after.svg', 'png');
  assert.equal(record.status, 'done');
});

// A gzip-compressed SVG (.svgz) is the same drawing: every target the service lists for it must
// hold exactly what the plain SVG's route gives (that route is checked against Chromium, Pillow and
// poppler above), and its plain-SVG target the drawing itself.
test('svgz is recognised by its content and reaches every svg target with the drawing svg gives', async (t) => {
  const catalogue = await fetchCatalogue(server.url);
  const svgzTargets = catalogue.find((f) => f.id === 'svgz')!.targets;
  const svgTargets = catalogue.find((f) => f.id === 'svg')!.targets;
  assert.deepEqual([...svgzTargets].sort(), [...new Set([...svgTargets, 'svg'])].sort(), 'svgz goes where svg goes, and to svg');
  const svgz = gzipSync(SAMPLE_SVG);

  // The content decides: a gzipped SVG under a neutral name is an svgz, gzip of other text is not.
  const named = await waitForJob(server.url, await submitOk(server.url, svgz, 'drawing.gz', 'png'));
  assert.equal(named.final.source, 'svgz');
  const plainGzip = await expectError(await submit(server.url, gzipSync('just some text\n'), 'notes.svgz', 'png'), 422, 'unsupported_target');
  assert.equal(plainGzip.error.source, 'tar.gz', 'gzip of anything but an SVG is not taken as svgz');

  const rasters = new Set(catalogue.filter((f) => f.category === 'image').map((f) => f.id));
  const pairs = await mapInFlight(svgzTargets, 3, async (target) => {
    const [fromSvgz, fromSvg] = await Promise.all([
      convert(server.url, svgz, 'drawing.svgz', target),
      target === 'svg' ? undefined : convert(server.url, Buffer.from(SAMPLE_SVG), 'drawing.svg', target),
    ]);
    const extension = target === 'pdfa' ? 'pdf' : target;
    return {
      target, bytes: fromSvgz.bytes, reference: fromSvg?.bytes,
      output: await writeTemp(fromSvgz.bytes, `svgz-${target}.${extension}`),
      referenceFile: fromSvg ? await writeTemp(fromSvg.bytes, `svg-${target}.${extension}`) : undefined,
    };
  });
  const images: Array<{ target: string; output: string; reference: string }> = [];
  for (const pair of pairs) {
    if (pair.target === 'svg') {
      assert.equal(pair.bytes.toString('utf8'), SAMPLE_SVG, 'svgz → svg is the drawing, byte for byte');
    } else if (rasters.has(pair.target)) {
      images.push({ target: pair.target, output: pair.output, reference: pair.referenceFile! });
    } else if (pair.target === 'pdf' || pair.target === 'pdfa') {
      assert.match(pdfInfo(pair.output), /^Pages:\s+1$/m);
      for (const file of [pair.output, pair.referenceFile!]) execFileSync('pdftoppm', ['-png', '-singlefile', '-r', '96', file, file.replace(/\.pdf$/, '')]);
      images.push({ target: pair.target, output: pair.output.replace(/\.pdf$/, '.png'), reference: pair.referenceFile!.replace(/\.pdf$/, '.png') });
    } else if (pair.target === 'eps' || pair.target === 'ps') {
      // The same PostScript program but for the moment it was written.
      const program = (bytes: Buffer) => bytes.toString('latin1').replace(/^%%CreationDate:.*$/m, '');
      assert.equal(program(pair.bytes), program(pair.reference!), `svgz → ${pair.target} is svg → ${pair.target}`);
    } else if (pair.target === 'zip') {
      const members = (file: string) => execFileSync('/usr/bin/python3', ['-c', 'import sys,zipfile,hashlib; z=zipfile.ZipFile(sys.argv[1]); print(sorted(z.namelist()))', file], { encoding: 'utf8' });
      assert.equal(members(pair.output), members(pair.referenceFile!), 'svgz → zip holds what svg → zip holds');
      const unpack = (file: string) => {
        const into = `${file}.d`;
        execFileSync('/usr/bin/python3', ['-c', 'import sys,zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])', file, into]);
        return into;
      };
      const [ours, theirs] = [unpack(pair.output), unpack(pair.referenceFile!)];
      for (const name of await readdir(ours)) images.push({ target: `zip:${name}`, output: path.join(ours, name), reference: path.join(theirs, name) });
    } else if (pair.target === 'emf' || pair.target === 'wmf' || pair.target === 'dxf') {
      // Inkscape's exports (their drawing is checked in vector-formats.test.ts): the same records
      // as svg → the target, but for the EMF header's description, which names the file written.
      const records = (bytes: Buffer) => (pair.target === 'emf' ? bytes.subarray(bytes.readUInt32LE(4)) : bytes);
      assert.ok(records(pair.bytes).equals(records(pair.reference!)), `svgz → ${pair.target} is svg → ${pair.target}`);
    } else {
      assert.fail(`svgz → ${pair.target}: no check for this target`);
    }
  }
  const results = await compareImages(images.map(({ output, reference }) => ({ output, reference })));
  t.diagnostic(images.map(({ target }, index) => `${target} ${results[index]!.ssim?.toFixed(4)}`).join(', '));
  for (const [index, { target }] of images.entries()) {
    assert.deepEqual([results[index]!.output.width, results[index]!.output.height], [results[index]!.reference!.width, results[index]!.reference!.height], `svgz → ${target}: the size svg gives`);
    assert.ok(results[index]!.ssim! >= 0.99, `svgz → ${target}: SSIM ${results[index]!.ssim} against svg → ${target}`);
  }
});

test('a damaged svgz, a gzip bomb and an external entity inside an svgz end cleanly, with nothing local in the output', async () => {
  const truncated = gzipSync(SAMPLE_SVG).subarray(0, 60);
  const damaged = await finalOf(truncated, 'cut.svgz', 'png');
  assert.equal(damaged.error?.code, 'corrupt_input');

  // 200 MiB of blank space after an SVG's start: a small upload that would inflate past the cap.
  const bomb = gzipSync(Buffer.concat([Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10">'), Buffer.alloc(200 * 1024 * 1024, 0x20), Buffer.from('</svg>')]), { level: 9 });
  assert.ok(bomb.length < 1024 * 1024, `the bomb is ${bomb.length} bytes`);
  const exploded = await finalOf(bomb, 'bomb.svgz', 'png');
  assert.equal(exploded.error?.code, 'input_too_complex');

  const xxe = `<?xml version="1.0"?><!DOCTYPE svg [<!ENTITY leak SYSTEM "file:///etc/passwd">]>
<svg xmlns="http://www.w3.org/2000/svg" width="400" height="100"><text x="5" y="50" font-size="10">&leak;</text></svg>`;
  const final = await finalOf(gzipSync(xxe), 'xxe.svgz', 'pdf');
  if (final.status === 'done') {
    const file = await writeTemp(Buffer.from(await (await fetch(`${server.url}${final.download_url}`)).arrayBuffer()), 'xxe.pdf');
    assert.doesNotMatch(pdfText(Buffer.alloc(0), file), /root:/, 'the svgz leaked /etc/passwd');
  } else {
    assert.ok(['corrupt_input', 'conversion_failed'].includes(final.error!.code), final.error!.code);
  }
});
