// The input's own caps (src/formats/input-caps.ts): an animation past the frame cap, a still image
// declaring more pixels than the cap, a ZIP package (zip, cbz, docx, odt, epub) with too many
// members or a decompression bomb in it, are each refused on every route their format has, before
// any engine runs, with the same answer (issue #32: the same GIF was refused on its way to WebP
// and kept ffmpeg busy for minutes on its way to MP4).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { strToU8, unzipSync, zipSync, type Zippable } from 'fflate';
import { ARCHIVE_LIMITS, checkInputCaps, declaredImageSize, gifFacts, MAX_ANIMATION_FRAMES, webpFacts } from '../src/formats/input-caps.ts';
import { convert, fetchCatalogue, finalsForTargets, mapInFlight, type CatalogueEntry } from './helpers/client.ts';
import { IMAGE_HEIGHT, IMAGE_WIDTH, sampleImage } from './helpers/fixtures.ts';
import { startServer, tempDir, type RunningServer } from './helpers/server.ts';

const made = new Map<string, Promise<string>>();

/** An animation of `frames` frames of 16 × 16 made by ffmpeg (once per kind), as GIF or WebP. */
function animation(format: 'gif' | 'webp', frames: number): Promise<string> {
  const key = `${format}:${frames}`;
  if (!made.has(key)) {
    made.set(key, tempDir().then((dir) => {
      const file = path.join(dir, `anim.${format}`);
      // testsrc changes every frame: libwebp's encoder merges frames that are alike.
      const encoder = format === 'gif' ? ['-f', 'gif'] : ['-c:v', 'libwebp_anim', '-loop', '0', '-f', 'webp'];
      execFileSync('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-f', 'lavfi', '-i', 'testsrc=size=16x16:rate=25', '-frames:v', String(frames), ...encoder, '-y', file]);
      return file;
    }));
  }
  return made.get(key)!;
}

const inMemory = (bytes: Buffer) => async (position: number, length: number) => bytes.subarray(position, position + length);

test('the frame counts are read from the structure: every frame of a short animation, one past the cap of a long one', async () => {
  assert.deepEqual(gifFacts(await readFile(await animation('gif', 3))), { width: 16, height: 16, frames: 3 });
  assert.deepEqual(gifFacts(await readFile(await animation('gif', 1200))), { width: 16, height: 16, frames: MAX_ANIMATION_FRAMES + 1 });
  const webp = await readFile(await animation('webp', 5));
  const facts = await webpFacts(inMemory(webp), webp.length);
  assert.equal(facts?.width, 16);
  assert.ok(facts!.frames >= 2 && facts!.frames <= 5, `${facts?.frames} frames`);
});

test('what the parsers cannot follow is left to the engine: no throw, no invented frames', async () => {
  const gif = await readFile(await animation('gif', 20));
  const half = gifFacts(gif.subarray(0, gif.length >> 1));
  assert.ok(half && half.frames > 0 && half.frames <= 20);
  assert.equal(gifFacts(Buffer.from('GIF89a')), undefined);
  assert.equal(gifFacts(Buffer.from('not a gif at all, only text')), undefined);
  const riff = Buffer.from('RIFF\x00\x00\x00\x00WEBPVP8 ', 'latin1');
  assert.equal(await webpFacts(inMemory(riff), riff.length), undefined);
  for (const [format, bytes] of [['gif', 'GIF89a\x10\x00'], ['webp', 'RIFF\x00\x00\x00\x00WEBPVP8X']] as const) {
    const file = path.join(await tempDir(), `broken.${format}`);
    execFileSync('sh', ['-c', 'cat > "$0"', file], { input: bytes });
    await checkInputCaps(file, format, { maxImagePixels: 100 });
  }
});

test('frames × width × height past the pixel cap is refused like a frame bomb', async () => {
  const file = await animation('gif', 40);
  await checkInputCaps(file, 'gif', { maxImagePixels: 16 * 16 * 40 });
  await assert.rejects(checkInputCaps(file, 'gif', { maxImagePixels: 16 * 16 * 40 - 1 }), (error: Error & { code?: string }) => {
    assert.equal(error.code, 'input_too_complex');
    assert.match(error.message, /40 frames of 16 × 16 pixels/);
    return true;
  });
});

/** Every still raster format whose header the input check reads: the sizes come from the header, in each format's own layout. */
const STILL_FORMATS = ['png', 'jpg', 'gif', 'webp', 'bmp', 'tiff', 'psd', 'tga', 'dds', 'ppm', 'pgm', 'pbm', 'pam', 'heic', 'avif', 'jxl',
  'jp2', 'j2k', 'pgx', 'xcf', 'pcx', 'sgi', 'ras', 'xwd', 'pfm', 'hdr', 'dpx', 'cin', 'fits', 'mng', 'jng', 'miff', 'xbm', 'xpm', 'wbmp', 'vicar', 'cals'];

test('the size a still image declares is read from its header, in every format the check knows', async () => {
  for (const format of STILL_FORMATS) {
    const size = declaredImageSize(format, (await sampleImage(format)).subarray(0, 512 * 1024));
    // HEIC declares its coded size, rounded up to whole blocks.
    if (format === 'heic') assert.ok(size && size.width >= IMAGE_WIDTH && size.height >= IMAGE_HEIGHT && size.width < IMAGE_WIDTH + 64, `${format}: ${JSON.stringify(size)}`);
    else assert.deepEqual(size, { width: IMAGE_WIDTH, height: IMAGE_HEIGHT }, format);
  }
  // Another format's bytes, or a header cut short, tell nothing: the engine decides.
  assert.equal(declaredImageSize('png', await sampleImage('jpg')), undefined);
  assert.equal(declaredImageSize('jpg', Buffer.from([0xff, 0xd8, 0xff])), undefined);
  assert.equal(declaredImageSize('sgi', Buffer.from([0x01, 0xda])), undefined);
});

let server: RunningServer;
let catalogue: readonly CatalogueEntry[];
/** The test service's pixel cap: the samples (96 × 64 = 6,144 pixels) are over it. */
const PIXEL_CAP = 5000;

before(async () => {
  // A duration cap of 3 s for the fragmented MP4s below, and a pixel cap the still samples pass.
  server = await startServer({ CONVERTD_RATE_LIMITS: 'off', CONVERTD_READ_RATE_LIMITS: 'off', CONVERTD_MAX_MEDIA_SECONDS: '3', CONVERTD_MAX_IMAGE_PIXELS: String(PIXEL_CAP) });
  catalogue = await fetchCatalogue(server.url);
});
after(async () => {
  await server?.stop();
});

/** Sends `bytes` to every target its format lists and returns each job's end. */
async function toEveryTarget(bytes: Buffer, filename: string, format: string) {
  const targets = catalogue.find((entry) => entry.id === format)?.targets ?? [];
  assert.ok(targets.length > 0, `${format} is listed with targets`);
  return finalsForTargets(server.url, bytes, filename, targets);
}

test('a still image declaring more pixels than the cap is refused on every route, to every target, before any engine runs', async () => {
  assert.ok(IMAGE_WIDTH * IMAGE_HEIGHT > PIXEL_CAP);
  const answers = await mapInFlight(STILL_FORMATS, 2, async (format) => ({ format, ends: await toEveryTarget(await sampleImage(format), `large.${format}`, format) }));
  for (const { format, ends } of answers) {
    for (const { target, final } of ends) {
      assert.equal(final.error?.code, 'input_too_complex', `${format} → ${target}: ${JSON.stringify(final.error ?? final.status)}`);
      // The input check's own words, naming the cap: no engine's check answered instead.
      assert.match(final.error.message, new RegExp(`declares \\d+ × \\d+ pixels, more than this service processes \\(${PIXEL_CAP.toLocaleString('en-US')} pixels\\)`), `${format} → ${target}`);
    }
  }
});

/** A ZIP package of each kind whose engines unpack it (archives, calibre, LibreOffice, pandoc), made here. */
async function zipPackages(): Promise<Record<string, Zippable>> {
  const dir = await tempDir();
  await writeFile(path.join(dir, 'book.md'), '# Caps\n\nA package with too much inside.\n');
  const packages: Record<string, Zippable> = {};
  for (const format of ['docx', 'odt', 'epub']) {
    execFileSync('pandoc', ['--from', 'markdown', '--to', format === 'epub' ? 'epub3' : format, '--metadata', 'title=Caps', '--output', `book.${format}`, 'book.md'], { cwd: dir });
    const members: Zippable = { ...unzipSync(await readFile(path.join(dir, `book.${format}`))) };
    // OpenDocument and EPUB name their kind in a first member stored as it is.
    if (members.mimetype) members.mimetype = [members.mimetype as Uint8Array, { level: 0 }];
    packages[format] = members;
  }
  const page = new Uint8Array(await sampleImage('png'));
  packages.cbz = { 'page-1.png': page };
  packages.zip = { 'page-1.png': page, 'notes.txt': strToU8('notes') };
  return packages;
}

test('a ZIP package with more members than the cap, or expanding like a bomb, is refused on every route, to every target, before any engine runs', async () => {
  const packages = await zipPackages();
  const variants = {
    // One member past the cap, each empty.
    flood: { add: (members: Zippable) => { for (let i = 0; i < ARCHIVE_LIMITS.entries; i++) members[`pad/${i}.txt`] = new Uint8Array(0); }, words: /more than 10000 members/ },
    // 17 MiB of zeros: past the ratio's floor, and hundreds of times the package's size.
    bomb: { add: (members: Zippable) => { members['zeros.bin'] = [new Uint8Array(17 * 1024 * 1024), { level: 9 }]; }, words: /decompression bomb/ },
  };
  for (const [format, members] of Object.entries(packages)) {
    for (const [variant, { add, words }] of Object.entries(variants)) {
      const packed = { ...members };
      add(packed);
      const ends = await toEveryTarget(Buffer.from(zipSync(packed)), `${variant}.${format}`, format);
      for (const { target, final } of ends) {
        assert.equal(final.error?.code, 'input_too_complex', `${variant} ${format} → ${target}: ${JSON.stringify(final.error ?? final.status)}`);
        assert.match(final.error.message, words, `${variant} ${format} → ${target}`);
      }
    }
  }
});

test('a 7-Zip comic (cb7) or a collection of comics (cbc) with a decompression bomb inside is refused to every target before calibre unpacks it', async () => {
  const dir = await tempDir();
  const page = await sampleImage('png');
  await writeFile(path.join(dir, '01.png'), page);
  await writeFile(path.join(dir, '02.bin'), Buffer.alloc(17 * 1024 * 1024));
  execFileSync('7z', ['a', '-bd', '-y', 'bomb.cb7', '01.png', '02.bin'], { cwd: dir, stdio: 'ignore' });
  const innerBomb = zipSync({ '01.png': new Uint8Array(page), '02.bin': [new Uint8Array(17 * 1024 * 1024), { level: 9 }] });
  // The collection itself is small and within every cap; the comic inside it is the bomb.
  const collection = Buffer.from(zipSync({ 'one.cbz': [innerBomb, { level: 0 }], 'comics.txt': strToU8('one.cbz:The first issue\n') }));
  for (const [name, bytes] of [['bomb.cb7', await readFile(path.join(dir, 'bomb.cb7'))], ['bomb.cbc', collection]] as const) {
    const format = name.slice(-3);
    const ends = await toEveryTarget(bytes, name, format);
    for (const { target, final } of ends) {
      assert.equal(final.error?.code, 'input_too_complex', `${name} → ${target}: ${JSON.stringify(final.error ?? final.status)}`);
      assert.match(final.error.message, /decompression bomb/, `${name} → ${target}`);
    }
  }
});

for (const source of ['gif', 'webp'] as const) {
  test(`a ${source.toUpperCase()} of 1,200 frames is refused on every route, to every target, before any engine runs`, async () => {
    const bytes = await readFile(await animation(source, 1200));
    const targets = catalogue.find((entry) => entry.id === source)!.targets;
    assert.ok(targets.length > 20, `${source} has ${targets.length} targets`);
    // Image, document and video targets alike (gif → mp4 went to ffmpeg with no frame cap).
    for (const needed of source === 'gif' ? ['png', 'pdf', 'mp4'] : ['pdf']) assert.ok(targets.includes(needed), `${source} → ${needed} listed`);
    const answers = await finalsForTargets(server.url, bytes, `bomb.${source}`, targets);
    for (const { target, final } of answers) {
      assert.equal(final.error?.code, 'input_too_complex', `${source} → ${target}: ${JSON.stringify(final.error ?? final.status)}`);
      // The input check's own words: no engine's cap answered instead.
      assert.match(final.error.message, /more than 1000 frames/, `${source} → ${target}`);
    }
  });
}

/**
 * A fragmented MP4 (samples in moof fragments) of `seconds`; with `lying`, every track's mdhd
 * declares the all-ones length a muxer writes when it does not know it (143,166 s at 30,000/s).
 */
async function fragmentedMp4(seconds: number, lying: boolean): Promise<Buffer> {
  const file = path.join(await tempDir(), 'fragmented.mp4');
  execFileSync('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-f', 'lavfi', '-i', `testsrc=size=160x120:rate=30:duration=${seconds}`,
    '-f', 'lavfi', '-i', `sine=duration=${seconds}`, '-c:v', 'libx264', '-pix_fmt', 'yuv420p', '-c:a', 'aac',
    '-movflags', 'frag_keyframe+empty_moov', '-frag_duration', '500000', '-y', file]);
  const bytes = await readFile(file);
  if (lying) {
    for (let at = bytes.indexOf('mdhd'); at >= 0; at = bytes.indexOf('mdhd', at + 4)) {
      assert.equal(bytes[at + 4], 0, 'a version 0 mdhd');
      bytes.writeUInt32BE(0xffffffff, at + 20);
    }
  }
  return bytes;
}

test('a fragmented MP4 is as long as its fragments, whatever its header declares: a 1 s clip declared endless converts, a 7 s one is over a 3 s cap', async () => {
  const lying = await fragmentedMp4(1, true);
  const declared = execFileSync('ffprobe', ['-v', 'error', '-show_entries', 'format=duration', '-of', 'csv=p=0', '-i', 'pipe:0'], { input: lying, encoding: 'utf8' });
  assert.ok(Number(declared) > 100_000, `ffprobe reads the header's ${declared.trim()} s`);
  for (const target of ['mp3', 'webm']) {
    const { bytes } = await convert(server.url, lying, 'clip.mp4', target);
    const file = path.join(await tempDir(), `out.${target}`);
    await writeFile(file, bytes);
    const seconds = Number(execFileSync('ffprobe', ['-v', 'error', '-show_entries', 'format=duration', '-of', 'csv=p=0', file], { encoding: 'utf8' }));
    assert.ok(seconds > 0.8 && seconds < 1.5, `${target} lasts ${seconds} s`);
  }
  // Too long on every route that decodes it, to every target (audio, video, pictures of frames).
  // Taking out a subtitle stream decodes neither sound nor picture (the upload's size bounds it):
  // this clip has none, which is what those targets answer.
  const ends = await toEveryTarget(await fragmentedMp4(7, false), 'long.mp4', 'mp4');
  const subtitles = new Set(catalogue.filter((entry) => entry.category === 'subtitle').map((entry) => entry.id));
  assert.ok(subtitles.size > 3);
  for (const { target, final } of ends.filter(({ target }) => subtitles.has(target))) {
    assert.match(final.error?.message ?? '', /no subtitle stream/, target);
  }
  for (const { target, final } of ends.filter(({ target }) => !subtitles.has(target))) {
    assert.equal(final.error?.code, 'input_too_complex', `long.mp4 → ${target}: ${JSON.stringify(final.error ?? final.status)}`);
    assert.match(final.error.message, /lasts 7 s/, target);
  }
});
