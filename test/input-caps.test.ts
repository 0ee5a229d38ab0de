// The input's own caps (src/formats/input-caps.ts): an animation past the frame cap is refused on
// every route its format has, before any engine runs, with the same answer (issue #32: the
// same GIF was refused on its way to WebP and kept ffmpeg busy for minutes on its way to MP4).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { checkInputCaps, gifFacts, MAX_ANIMATION_FRAMES, webpFacts } from '../src/formats/input-caps.ts';
import { convert, fetchCatalogue, mapInFlight, submitOk, waitForJob, type CatalogueEntry } from './helpers/client.ts';
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

let server: RunningServer;
let catalogue: readonly CatalogueEntry[];

before(async () => {
  // A duration cap of 3 s for the fragmented MP4s below.
  server = await startServer({ CONVERTD_RATE_LIMITS: 'off', CONVERTD_READ_RATE_LIMITS: 'off', CONVERTD_MAX_MEDIA_SECONDS: '3' });
  catalogue = await fetchCatalogue(server.url);
});
after(async () => {
  await server?.stop();
});

for (const source of ['gif', 'webp'] as const) {
  test(`a ${source.toUpperCase()} of 1,200 frames is refused on every route, to every target, before any engine runs`, async () => {
    const bytes = await readFile(await animation(source, 1200));
    const targets = catalogue.find((entry) => entry.id === source)!.targets;
    assert.ok(targets.length > 20, `${source} has ${targets.length} targets`);
    // Image, document and video targets alike (gif → mp4 went to ffmpeg with no frame cap).
    for (const needed of source === 'gif' ? ['png', 'pdf', 'mp4'] : ['pdf']) assert.ok(targets.includes(needed), `${source} → ${needed} listed`);
    const answers = await mapInFlight(targets, 6, async (target) => {
      const jobId = await submitOk(server.url, bytes, `bomb.${source}`, target);
      return { target, final: (await waitForJob(server.url, jobId)).final };
    });
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
  const long = await fragmentedMp4(7, false);
  const jobId = await submitOk(server.url, long, 'long.mp4', 'mp3');
  const { final } = await waitForJob(server.url, jobId);
  assert.equal(final.error?.code, 'input_too_complex', JSON.stringify(final.error ?? final.status));
  assert.match(final.error.message, /lasts 7 s/);
});
