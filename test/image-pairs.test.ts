// Every image pair the catalogue advertises goes through the whole client flow, and the output is
// checked with Debian's own libvips and `file`, not with the sharp that made it.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { convert, fetchCatalogue, type CatalogueEntry } from './helpers/client.ts';
import { IMAGE_HEIGHT, IMAGE_WIDTH, sampleImage } from './helpers/fixtures.ts';
import { startServer, type RunningServer } from './helpers/server.ts';
import { decodeImage, fileMime, writeTemp } from './helpers/tools.ts';

const SHARP_FORMATS = ['avif', 'gif', 'jpg', 'png', 'tiff', 'webp'];
/** Formats read and written (through ImageMagick, chained with sharp). */
const RARE = ['bmp', 'ico', 'tga', 'pcx', 'ppm', 'pgm', 'pbm', 'xpm'];
/** Formats only read. */
const READ_ONLY = ['psd', 'dds'];
const IMAGE_FORMATS = [...SHARP_FORMATS, 'heic', 'jxl', 'jp2', ...RARE];
const MIME: Record<string, string> = {
  avif: 'image/avif', gif: 'image/gif', jpg: 'image/jpeg', png: 'image/png', tiff: 'image/tiff', webp: 'image/webp',
  heic: 'image/heic', jxl: 'image/jxl', jp2: 'image/jp2',
  bmp: 'image/bmp', ico: 'image/vnd.microsoft.icon', tga: 'image/x-tga', pcx: 'image/x-pcx', ppm: 'image/x-portable-pixmap',
  pgm: 'image/x-portable-graymap', pbm: 'image/x-portable-bitmap', xpm: 'image/x-xpixmap', psd: 'image/vnd.adobe.photoshop', dds: 'image/vnd-ms.dds',
};
/** Targets whose colours are reduced to grey or to black and white: the average is not comparable. */
const GREY_TARGETS = new Set(['pgm', 'pbm']);


let server: RunningServer;
let catalogue: readonly CatalogueEntry[];

before(async () => {
  server = await startServer({ CONVERTD_RATE_LIMITS: 'off' });
  catalogue = await fetchCatalogue(server.url);
});
after(async () => {
  await server.stop();
});

test('the catalogue lists every raster format with every other as a target', () => {
  for (const id of [...IMAGE_FORMATS, ...READ_ONLY]) {
    const entry = catalogue.find((f) => f.id === id);
    assert.ok(entry, `${id} missing from /api/formats`);
    assert.equal(entry.category, 'image');
    assert.equal(entry.media_type, MIME[id]);
    for (const target of IMAGE_FORMATS.filter((t) => t !== id)) assert.ok(entry.targets.includes(target), `${id} → ${target}`);
  }
  assert.deepEqual(catalogue.map((f) => f.id), [...catalogue.map((f) => f.id)].sort(), 'sorted by id');
});

describe('every advertised image pair converts', { concurrency: 4 }, () => {
  for (const source of [...IMAGE_FORMATS, ...READ_ONLY]) {
    // Every image target the catalogue offers (checked complete above), directly or chained.
    for (const target of IMAGE_FORMATS.filter((t) => t !== source)) {
      test(`${source} → ${target}`, async () => {
        const input = await sampleImage(source);
        const { bytes, response } = await convert(server.url, input, `sample.${source}`, target);
        assert.equal(response.headers.get('content-type'), MIME[target]);
        const file = await writeTemp(bytes, `out.${target}`);
        if (target === 'jxl') {
          // file(1) 5.44 knows only the boxed JPEG XL container, not the bare codestream (FF 0A).
          const boxed = bytes.subarray(0, 12).equals(Buffer.from('0000000c4a584c200d0a870a', 'hex'));
          assert.ok(boxed || (bytes[0] === 0xff && bytes[1] === 0x0a), 'a JPEG XL signature');
        } else {
          // file(1) spells the Netpbm greyscale type its own way.
          assert.equal(fileMime(file), target === 'pgm' ? 'image/x-portable-greymap' : MIME[target], 'file(1) recognises the output type');
        }
        const facts = decodeImage(file);
        assert.equal(facts.width, IMAGE_WIDTH);
        assert.equal(facts.height, IMAGE_HEIGHT);
        // The sample's average colour is about 118; lossy and palette encoders stay close.
        if (!GREY_TARGETS.has(target)) {
          const original = decodeImage(await writeTemp(input, `in.${source}`)).average;
          assert.ok(Math.abs(facts.average - original) < 12, `average ${facts.average} far from the input's ${original}`);
        }
      });
    }
  }
});

test('the source format comes from the content, not the name', async () => {
  const png = await sampleImage('png');
  const { record, bytes } = await convert(server.url, png, 'holiday.jpg', 'webp');
  assert.equal(record.source, 'png');
  assert.equal(fileMime(await writeTemp(bytes, 'x.webp')), 'image/webp');
});

test('target names are case-insensitive, tolerate a leading dot, and accept aliases', async () => {
  const png = await sampleImage('png');
  for (const [target, id] of [['.WEBP', 'webp'], ['JPEG', 'jpg'], ['tif', 'tiff']] as const) {
    const form = new FormData();
    form.append('file', new Blob([png]), 'a.png');
    form.append('target', target);
    const response = await fetch(`${server.url}/api/convert`, { method: 'POST', body: form });
    assert.equal(response.status, 200, `${target} refused`);
    const { job_id } = (await response.json()) as { job_id: string };
    const record = (await (await fetch(`${server.url}/api/progress/${job_id}`)).json()) as { target: string };
    assert.equal(record.target, id);
  }
});

test('the download is named after the upload with the target extension', async () => {
  const { response } = await convert(server.url, await sampleImage('png'), 'Ferien am Meer.png', 'jpg');
  const disposition = response.headers.get('content-disposition') ?? '';
  assert.match(disposition, /^attachment;/);
  assert.match(disposition, /filename="Ferien am Meer\.jpg"/);
});
