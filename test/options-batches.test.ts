// Several files in one result (api-contract.md, "Several files in one result"): an animated GIF or
// WebP as a ZIP of its frames, an uploaded archive converted member by member (`each`), and the
// compression level of archive targets. Every check is independent of the engines: the ZIPs are
// read by Python's zipfile (names, order, bytes) and every image in them decoded by Pillow and
// compared by pixels with the source frame or file it came from.
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { download, waitForJob, type ProgressRecord } from './helpers/client.ts';
import { noisePng } from './helpers/fixtures.ts';
import { startServer, tempDir, type RunningServer } from './helpers/server.ts';
import { writeTemp } from './helpers/tools.ts';

let server: RunningServer;
let work: string;

/**
 * Largest mean absolute difference (0-255 per channel) between a converted image and its source
 * for them to count as the same picture: lossy WebP/JPEG at default quality stays under 6 on
 * these flat and noisy samples; two different frames of the samples differ by more than 40.
 */
const SAME_PICTURE = 12;
/** Smallest difference between two frames that must differ (the samples' frames differ by 40+). */
const DIFFERENT_PICTURE = 30;

// Python with Pillow (/usr/bin/python3, as the other helpers): makes animations, reads ZIPs.
const PYTHON = String.raw`
import io, json, sys, zipfile
from PIL import Image, ImageChops, ImageStat

def frames_of(path):
    im = Image.open(path)
    out = []
    for i in range(getattr(im, 'n_frames', 1)):
        im.seek(i)
        out.append(im.convert('RGB'))
    return out

def diff(a, b):
    if a.size != b.size:
        b = b.resize(a.size)
    return sum(ImageStat.Stat(ImageChops.difference(a.convert('RGB'), b.convert('RGB'))).mean) / 3

cmd = sys.argv[1]
if cmd == 'picture':
    # picture OUT WIDTH HEIGHT R G B: a smooth gradient from the colour to white, with a dark band
    # (lossy encoders keep such a picture close; they would blur random noise far apart).
    out, w, h, r, g, b = sys.argv[2], *map(int, sys.argv[3:8])
    im = Image.new('RGB', (w, h))
    im.putdata([(r + (255 - r) * x // w, g + (255 - g) * y // h, b) if not (h // 3 <= y < h // 2) else (20, 20, 20) for y in range(h) for x in range(w)])
    im.save(out, quality=92) if out.endswith('.jpg') else im.save(out)
elif cmd == 'animation':
    # animation OUT FORMAT FRAMES WIDTH HEIGHT: frame k is a flat colour with a square at a place of its own.
    out, fmt, n, w, h = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
    colours = [(220, 40, 40), (40, 200, 60), (40, 60, 220), (230, 200, 30), (160, 40, 200), (30, 200, 200)]
    frames = []
    for k in range(n):
        im = Image.new('RGB', (w, h), colours[k % len(colours)])
        s = max(1, min(w, h) // 3)
        x = (k * 7) % max(1, w - s)
        im.paste((255, 255, 255), (x, 0, x + s, s))
        frames.append(im)
    if fmt == 'gif':
        frames[0].save(out, save_all=True, append_images=frames[1:], duration=100, loop=0, optimize=False, disposal=1)
    else:
        frames[0].save(out, save_all=True, append_images=frames[1:], duration=100, loop=0, lossless=True)
    print(json.dumps({'frames': Image.open(out).n_frames}))
elif cmd == 'zip':
    # zip FILE [REFS_JSON]: the members in order; images decoded; REFS maps a member name to
    # [source file, frame index] to compare with.
    refs = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
    cache = {}
    members = []
    with zipfile.ZipFile(sys.argv[2]) as z:
        for info in z.infolist():
            data = z.read(info.filename)
            entry = {'name': info.filename, 'size': len(data), 'stored': info.compress_type == zipfile.ZIP_STORED}
            try:
                im = Image.open(io.BytesIO(data))
                im.load()
                entry.update(format=im.format, width=im.width, height=im.height)
                ref = refs.get(info.filename)
                if ref:
                    if ref[0] not in cache:
                        cache[ref[0]] = frames_of(ref[0])
                    entry['diff'] = diff(im, cache[ref[0]][ref[1]])
                entry['rgb'] = im.convert('RGB')
            except Exception:
                entry['text'] = data[:200].decode('utf-8', 'replace')
            members.append(entry)
    for a, b in zip(members, members[1:]):
        if 'rgb' in a and 'rgb' in b and a['rgb'].size == b['rgb'].size:
            b['diff_previous'] = diff(a['rgb'], b['rgb'])
    for m in members:
        m.pop('rgb', None)
    print(json.dumps(members))
`;

async function python(...args: string[]): Promise<unknown> {
  const { stdout } = await promisify(execFile)('/usr/bin/python3', ['-c', PYTHON, ...args], { maxBuffer: 64 * 1024 * 1024 });
  return stdout.trim() ? JSON.parse(stdout) : undefined;
}

interface ZipEntry { name: string; size: number; stored: boolean; format?: string; width?: number; height?: number; diff?: number; diff_previous?: number; text?: string }

async function readZip(bytes: Buffer, refs: Record<string, [string, number]> = {}): Promise<ZipEntry[]> {
  const file = await writeTemp(bytes, 'result.zip');
  return await python('zip', file, JSON.stringify(refs)) as ZipEntry[];
}

async function animation(format: 'gif' | 'webp', frames: number, width: number, height: number): Promise<string> {
  const file = path.join(work, `anim-${frames}-${width}x${height}.${format}`);
  const made = await python('animation', file, format, String(frames), String(width), String(height)) as { frames: number };
  assert.equal(made.frames, frames, 'the sample animation has the frames asked for');
  return file;
}

async function submitWith(file: string | Buffer, filename: string, target: string, options: Record<string, string> = {}): Promise<Response> {
  const form = new FormData();
  form.append('file', new Blob([typeof file === 'string' ? await fs.readFile(file) : file]), filename);
  form.append('target', target);
  for (const [name, value] of Object.entries(options)) form.append(name, value);
  return fetch(`${server.url}/api/convert`, { method: 'POST', body: form });
}

/** Submits with options and waits: the final record, every record seen, and the result's bytes when done. */
async function run(file: string | Buffer, filename: string, target: string, options: Record<string, string> = {}, intervalMs = 100): Promise<{ final: ProgressRecord; seen: ProgressRecord[]; bytes?: Buffer }> {
  const response = await submitWith(file, filename, target, options);
  const body = await response.json() as { ok: boolean; job_id: string };
  assert.equal(response.status, 200, `submission refused: ${JSON.stringify(body)}`);
  const { final, seen } = await waitForJob(server.url, body.job_id, { intervalMs, timeoutMs: 120_000 });
  if (final.status !== 'done') return { final, seen };
  const { response: got, bytes } = await download(server.url, final.download_url!);
  assert.equal(got.status, 200);
  assert.match(final.download_url!, /\.zip$/);
  return { final, seen, bytes };
}

async function options(source: string, target: string): Promise<Array<{ name: string; type: string; values?: string[]; default?: unknown; minimum?: number; maximum?: number }>> {
  const response = await fetch(`${server.url}/api/formats/${source}/${target}`);
  assert.equal(response.status, 200, `${source} → ${target}: ${response.status}`);
  return (await response.json() as { options: Array<{ name: string; type: string; values?: string[] }> }).options;
}

/** Packs `files` (name → bytes, in this order) with bsdtar into an archive of `format`. */
async function pack(files: ReadonlyArray<[string, Buffer]>, format: 'zip' | 'tar' | 'tar.gz'): Promise<Buffer> {
  const dir = await tempDir('convertd-batch-');
  for (const [name, bytes] of files) {
    await fs.mkdir(path.dirname(path.join(dir, name)), { recursive: true });
    await fs.writeFile(path.join(dir, name), bytes);
  }
  const out = path.join(dir, `out.${format}`);
  const flags = { zip: ['--format', 'zip'], tar: ['--format', 'pax'], 'tar.gz': ['--format', 'pax', '-z'] }[format];
  execFileSync('bsdtar', ['-c', '-f', out, ...flags, '-C', dir, ...files.map(([name]) => name)]);
  return fs.readFile(out);
}

before(async () => {
  server = await startServer({ CONVERTD_RATE_LIMITS: 'off' });
  work = await tempDir('convertd-batches-');
});
after(async () => { await server.stop(); });

describe('discovery lists each and compression_level', { concurrency: 4 }, () => {
  test('an animated GIF or WebP to zip offers each with the frame formats, png by default', async () => {
    for (const source of ['gif', 'webp']) {
      const each = (await options(source, 'zip')).find((o) => o.name === 'each');
      assert.deepEqual(each?.values, ['png', 'jpg', 'webp', 'gif']);
      assert.equal(each?.default, 'png');
    }
  });

  test('an archive to zip (zip itself too) offers each with every format some engine writes', async () => {
    for (const source of ['zip', 'tar', 'tar.gz', '7z']) {
      const found = await options(source, 'zip');
      const each = found.find((o) => o.name === 'each');
      for (const format of ['png', 'jpg', 'webp', 'pdf', 'mp3']) assert.ok(each?.values?.includes(format), `${source} → zip: each offers ${format}: ${JSON.stringify(each)}`);
      assert.ok(found.some((o) => o.name === 'width'), 'the image options reach the members');
      const level = found.find((o) => o.name === 'compression_level');
      assert.deepEqual([level?.type, level?.minimum, level?.maximum, level?.default], ['integer', 0, 9, 6]);
    }
    const catalogue = await (await fetch(`${server.url}/api/formats`)).json() as { formats: Array<{ id: string; targets: string[] }> };
    assert.ok(catalogue.formats.find((f) => f.id === 'zip')!.targets.includes('zip'), 'zip lists itself among its targets');
    assert.ok(!catalogue.formats.find((f) => f.id === 'png')!.targets.includes('zip'), 'a still PNG does not reach zip through a GIF');
    const bzip2 = (await options('tar', 'tar.bz2')).find((o) => o.name === 'compression_level');
    assert.equal(bzip2?.minimum, 1, 'bzip2 has no level 0');
    assert.equal(bzip2?.default, 9);
    assert.equal((await options('zip', 'tar')).find((o) => o.name === 'compression_level'), undefined, 'a plain tar compresses nothing');
  });
});

describe('an animation becomes a ZIP of its frames', { concurrency: 4 }, () => {
  test('GIF → zip: every frame as frame-NNN.png, in order, each the source frame by pixels', async () => {
    const gif = await animation('gif', 6, 48, 32);
    const { final, bytes } = await run(gif, 'dance.gif', 'zip');
    assert.equal(final.status, 'done', JSON.stringify(final.error));
    const refs = Object.fromEntries(Array.from({ length: 6 }, (_, k) => [`frame-00${k + 1}.png`, [gif, k] as [string, number]]));
    const members = await readZip(bytes!, refs);
    assert.deepEqual(members.map((m) => m.name), Object.keys(refs));
    for (const member of members) {
      assert.equal(member.format, 'PNG');
      assert.deepEqual([member.width, member.height], [48, 32]);
      assert.ok(member.diff! < SAME_PICTURE, `${member.name} is its source frame (mean difference ${member.diff})`);
    }
    assert.ok(members[1]!.diff_previous! > DIFFERENT_PICTURE, `frame 2 differs from frame 1 (${members[1]!.diff_previous})`);
  });

  test('WebP → zip with each=jpg and width: every frame a JPEG of that width, the aspect ratio kept', async () => {
    const webp = await animation('webp', 4, 60, 40);
    const { final, bytes } = await run(webp, 'clip.webp', 'zip', { each: 'jpg', width: '30' });
    assert.equal(final.status, 'done', JSON.stringify(final.error));
    assert.deepEqual(final.options, { each: 'jpg', width: '30' });
    const refs = Object.fromEntries(Array.from({ length: 4 }, (_, k) => [`frame-00${k + 1}.jpg`, [webp, k] as [string, number]]));
    const members = await readZip(bytes!, refs);
    assert.deepEqual(members.map((m) => m.name), Object.keys(refs));
    for (const member of members) {
      assert.equal(member.format, 'JPEG');
      assert.deepEqual([member.width, member.height], [30, 20]);
      assert.ok(member.diff! < SAME_PICTURE, `${member.name} is its source frame (mean difference ${member.diff})`);
    }
  });

  test('a still GIF gives a ZIP of one frame', async () => {
    const gif = await animation('gif', 1, 20, 20);
    const { final, bytes } = await run(gif, 'still.gif', 'zip', { each: 'webp' });
    assert.equal(final.status, 'done', JSON.stringify(final.error));
    const members = await readZip(bytes!, { 'frame-001.webp': [gif, 0] });
    assert.deepEqual(members.map((m) => [m.name, m.format]), [['frame-001.webp', 'WEBP']]);
    assert.ok(members[0]!.diff! < SAME_PICTURE);
  });

  test('a GIF past the frame cap (1,000) is input_too_complex, told the cap', async () => {
    const gif = await animation('gif', 1001, 2, 2);
    const { final } = await run(gif, 'flood.gif', 'zip');
    assert.equal(final.status, 'error');
    assert.equal(final.error?.code, 'input_too_complex');
    // Refused on the header's frame count, which the message names, before any frame is decoded.
    assert.match(final.error!.message, /more than 1000 frames/);
  });
});

describe('an archive converted member by member (each)', { concurrency: 3 }, () => {
  const pngs: Buffer[] = [];
  let jpg: Buffer;
  const notes = Buffer.from('a note that stays a note\n'.repeat(20));
  const blob = Buffer.from([0x00, 0x13, 0x37, 0x42, 0x99, 0xff, 0x01, 0x02]);
  /** The sources by member name, for the pixel comparison. */
  const sources: Record<string, string> = {};

  before(async () => {
    const dir = await tempDir('convertd-batch-src-');
    const pictures: Array<[string, number, number, string]> = [['shots/a.png', 40, 30, '200 30 30'], ['shots/b.png', 50, 20, '30 160 40'], ['shots/c.png', 24, 24, '40 40 200'], ['photos/d.jpg', 64, 48, '200 120 40']];
    for (const [name, width, height, colour] of pictures) {
      sources[name] = path.join(dir, name.replace('/', '-'));
      await python('picture', sources[name], String(width), String(height), ...colour.split(' '));
    }
    for (const name of ['shots/a.png', 'shots/b.png', 'shots/c.png']) pngs.push(await fs.readFile(sources[name]!));
    jpg = await fs.readFile(sources['photos/d.jpg']!);
  });

  const files = (): Array<[string, Buffer]> => [
    ['shots/a.png', pngs[0]!], ['notes.txt', notes], ['shots/b.png', pngs[1]!], ['photos/d.jpg', jpg], ['data.bin', blob], ['shots/c.png', pngs[2]!],
  ];
  const converted = ['shots/a.webp', 'notes.txt', 'shots/b.webp', 'photos/d.webp', 'data.bin', 'shots/c.webp'];

  for (const format of ['zip', 'tar.gz'] as const) {
    test(`${format} → zip with each=webp: images converted at their paths, the rest carried and listed in skipped`, async () => {
      const { final, bytes } = await run(await pack(files(), format), `folder.${format}`, 'zip', { each: 'webp' });
      assert.equal(final.status, 'done', JSON.stringify(final.error));
      assert.deepEqual(final.skipped, ['notes.txt', 'data.bin']);
      const refs = Object.fromEntries(Object.entries(sources).map(([name, file]) => [name.replace(/\.\w+$/, '.webp'), [file, 0] as [string, number]]));
      const members = await readZip(bytes!, refs);
      assert.deepEqual(members.map((m) => m.name), converted, 'the archive\'s order, folders kept, new extensions');
      for (const member of members.filter((m) => m.name.endsWith('.webp'))) {
        assert.equal(member.format, 'WEBP', member.name);
        assert.ok(member.diff! < SAME_PICTURE, `${member.name} shows its source (mean difference ${member.diff})`);
      }
      assert.deepEqual(members.filter((m) => m.name.endsWith('.webp')).map((m) => [m.width, m.height]), [[40, 30], [50, 20], [64, 48], [24, 24]]);
      assert.equal(members.find((m) => m.name === 'notes.txt')!.size, notes.length);
      assert.equal(members.find((m) => m.name === 'notes.txt')!.text, notes.subarray(0, 200).toString());
      assert.equal(members.find((m) => m.name === 'data.bin')!.size, blob.length);
    });
  }

  test('the job\'s other options reach every member (width), and a damaged member is carried, not fatal', async () => {
    const broken = pngs[0]!.subarray(0, 60); // a PNG cut after its header: its conversion fails
    const archive = await pack([['a.png', pngs[0]!], ['broken.png', broken], ['b.jpg', jpg]], 'tar');
    const { final, bytes } = await run(archive, 'set.tar', 'zip', { each: 'png', width: '20' });
    assert.equal(final.status, 'done', JSON.stringify(final.error));
    assert.deepEqual(final.skipped, ['broken.png']);
    assert.deepEqual(final.options, { each: 'png', width: '20' });
    const members = await readZip(bytes!);
    assert.deepEqual(members.map((m) => [m.name, m.format, m.width]), [['a.png', 'PNG', 20], ['broken.png', undefined, undefined], ['b.png', 'PNG', 20]]);
    assert.equal(members[1]!.size, broken.length, 'carried unchanged');
  });

  test('a 20-member archive: progress rises through intermediate values', async () => {
    const many: Array<[string, Buffer]> = [];
    for (let i = 1; i <= 20; i++) many.push([`p${String(i).padStart(2, '0')}.png`, await noisePng(400, 300)]);
    const { final, seen, bytes } = await run(await pack(many, 'zip'), 'many.zip', 'zip', { each: 'webp' }, 25);
    assert.equal(final.status, 'done', JSON.stringify(final.error));
    const between = new Set(seen.map((r) => r.progress).filter((p): p is number => p !== undefined && p > 0 && p < 100));
    // waitForJob already checks that progress never goes down; members convert one at a time.
    assert.ok(between.size >= 3, `intermediate progress values seen: ${[...between].join(', ')}`);
    assert.equal((await readZip(bytes!)).length, 20);
  });

  test('an archive with more members than the cap ends in the archive engine\'s error', async () => {
    const file = path.join(work, 'flood.zip');
    execFileSync('/usr/bin/python3', ['-c', 'import sys, zipfile\nwith zipfile.ZipFile(sys.argv[1], "w") as z:\n  for i in range(10001): z.writestr(f"f{i}.txt", "")', file]);
    const { final } = await run(file, 'flood.zip', 'zip', { each: 'webp' });
    assert.equal(final.status, 'error');
    assert.equal(final.error?.code, 'input_too_complex');
    assert.match(final.error!.message, /10000 members/);
  });

  test('a zip is converted member by member to a zip (zip → zip with each)', async () => {
    const { final, bytes } = await run(await pack([['x/a.png', pngs[2]!]], 'zip'), 'one.zip', 'zip', { each: 'jpg' });
    assert.equal(final.status, 'done', JSON.stringify(final.error));
    assert.deepEqual((await readZip(bytes!)).map((m) => [m.name, m.format]), [['x/a.jpg', 'JPEG']]);
    assert.equal(final.skipped, undefined);
  });
});

describe('compression_level of archive targets', () => {
  test('level 0 stores, level 9 compresses: the same members, sizes far apart', async () => {
    const text = Buffer.from(Array.from({ length: 4000 }, (_, i) => `line ${i}: the quick brown fox\n`).join(''));
    const archive = await pack([['a.txt', text], ['b.txt', text.subarray(0, 5000)]], 'tar');
    const [stored, small, plain] = await Promise.all([
      run(archive, 'x.tar', 'zip', { compression_level: '0' }),
      run(archive, 'x.tar', 'zip', { compression_level: '9' }),
      run(archive, 'x.tar', 'zip'),
    ]);
    for (const result of [stored, small, plain]) assert.equal(result.final.status, 'done', JSON.stringify(result.final.error));
    const [a, b, c] = await Promise.all([readZip(stored.bytes!), readZip(small.bytes!), readZip(plain.bytes!)]);
    for (const members of [a, b, c]) assert.deepEqual(members.map((m) => [m.name, m.size]), [['a.txt', text.length], ['b.txt', 5000]]);
    assert.ok(a.every((m) => m.stored), 'level 0: members stored');
    // Repetitive text deflates more than tenfold; stored it is its own size.
    assert.ok(stored.bytes!.length > text.length, `level 0: ${stored.bytes!.length} bytes`);
    assert.ok(small.bytes!.length * 10 < stored.bytes!.length, `level 9 (${small.bytes!.length}) vs level 0 (${stored.bytes!.length})`);
    assert.ok(plain.bytes!.length * 10 < stored.bytes!.length, 'without the option: compressed as before');
  });

  test('a level the target does not have is a 422 naming the bounds', async () => {
    const archive = await pack([['a.txt', Buffer.from('hi')]], 'tar');
    const refused = await submitWith(archive, 'x.tar', 'tar.bz2', { compression_level: '0' });
    const body = await refused.json() as { error: { code: string; option?: string; minimum?: number } & Record<string, unknown> };
    assert.equal(refused.status, 422, JSON.stringify(body));
    assert.equal(body.error.code, 'invalid_option');
    assert.equal(body.error.option, 'compression_level');
    assert.equal(body.error.minimum, 1, 'bzip2 starts at level 1');
  });
});
