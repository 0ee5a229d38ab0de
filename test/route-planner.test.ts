// The route planner is a graph search over declared edges; with one engine installed today no
// HTTP request can make it chain, so it is checked directly with declared edges. (The engines
// here are declarations only: the planner never calls convert.)
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { OPTIONS } from '../src/engines/options.ts';
import { assignOptions, routeOptions, RoutePlanner } from '../src/engines/planner.ts';
import type { ConversionEdge, Engine } from '../src/engines/types.ts';

function declared(id: string, edges: ConversionEdge[]): { engine: Engine; edges: ConversionEdge[] } {
  const engine: Engine = {
    id, edges, reportsProgress: false,
    estimateSeconds: () => 1,
    probe: async () => edges,
    convert: async () => { throw new Error('not called by the planner'); },
  };
  return { engine, edges };
}

const planner = new RoutePlanner([
  declared('office', [{ from: 'docx', to: 'pdf', cost: 4 }, { from: 'md', to: 'odt', cost: 3 }, { from: 'odt', to: 'pdf', cost: 4 }]),
  declared('markup', [{ from: 'md', to: 'html', cost: 1 }, { from: 'html', to: 'pdf', cost: 3 }, { from: 'md', to: 'pdf', cost: 20 }]),
  declared('raster', [{ from: 'pdf', to: 'png', cost: 2 }, { from: 'png', to: 'webp', cost: 1 }]),
]);

test('a direct edge is used when it is the cheapest', () => {
  const route = planner.route('docx', 'pdf')!;
  assert.deepEqual(route.map((s) => [s.engine.id, s.from, s.to]), [['office', 'docx', 'pdf']]);
});

test('two engines are chained where that is cheaper or the only way', () => {
  // md → pdf directly costs 20; md → html → pdf costs 4; md → odt → pdf costs 7.
  assert.deepEqual(planner.route('md', 'pdf')!.map((s) => `${s.engine.id}:${s.from}>${s.to}`), ['markup:md>html', 'markup:html>pdf']);
  assert.deepEqual(planner.route('docx', 'png')!.map((s) => s.engine.id), ['office', 'raster']);
});

test('routes are at most three steps, and targets() lists every reachable format', () => {
  assert.deepEqual(planner.route('docx', 'webp')!.map((s) => s.to), ['pdf', 'png', 'webp']);
  // The cheap way to pdf (through html) leaves no step for png → webp: the dear direct edge wins.
  assert.deepEqual(planner.route('md', 'webp')!.map((s) => `${s.from}>${s.to}`), ['md>pdf', 'pdf>png', 'png>webp']);
  assert.equal(planner.route('odt', 'webp')!.length, 3);
  const fourSteps = new RoutePlanner([declared('chain', [
    { from: 'a', to: 'b', cost: 1 }, { from: 'b', to: 'c', cost: 1 }, { from: 'c', to: 'd', cost: 1 }, { from: 'd', to: 'e', cost: 1 },
  ])]);
  assert.equal(fourSteps.route('a', 'e'), undefined, 'four steps is past the cap');
  assert.deepEqual(fourSteps.targets('a'), ['b', 'c', 'd']);
});

test('an edge that does not chain serves only the uploaded format, never mid-route', () => {
  const media = new RoutePlanner([
    declared('images', [{ from: 'png', to: 'gif', cost: 1 }, { from: 'gif', to: 'png', cost: 1 }]),
    declared('video', [
      { from: 'gif', to: 'mp4', cost: 8, chainable: false },
      { from: 'mp4', to: 'gif', cost: 8, chainable: false },
      { from: 'mp4', to: 'mp3', cost: 3 },
    ]),
  ]);
  assert.deepEqual(media.route('gif', 'mp4')!.map((s) => s.to), ['mp4']);
  assert.equal(media.route('png', 'mp4'), undefined, 'no still image becomes a video through gif');
  assert.equal(media.route('png', 'mp3'), undefined, 'and never a sound');
  assert.equal(media.route('mp4', 'png'), undefined, 'no video becomes a still through gif');
  assert.deepEqual(media.targets('png'), ['gif']);
  assert.deepEqual(media.targets('gif'), ['mp4', 'png']);
  assert.deepEqual(media.targets('mp4'), ['gif', 'mp3']);
  assert.deepEqual(planner.targets('docx'), ['pdf', 'png', 'webp']);
  assert.equal(planner.route('png', 'docx'), undefined);
  assert.equal(planner.route('png', 'png'), undefined);
});

test('an edge that ends a route is never followed by another step', () => {
  const renditions = new RoutePlanner([
    declared('office', [{ from: 'docx', to: 'pdf', cost: 4 }]),
    declared('pdf', [{ from: 'pdf', to: 'png', cost: 2, endsRoute: true }]),
    declared('raster', [{ from: 'png', to: 'ico', cost: 1 }, { from: 'png', to: 'webp', cost: 1 }]),
  ]);
  assert.deepEqual(renditions.route('docx', 'png')!.map((s) => s.to), ['pdf', 'png'], 'it may end a longer route');
  assert.equal(renditions.route('docx', 'ico'), undefined, 'but nothing comes after it');
  assert.equal(renditions.route('pdf', 'webp'), undefined, 'not even when it is the first step');
  assert.deepEqual(renditions.targets('docx'), ['pdf', 'png']);
  assert.deepEqual(renditions.targets('png'), ['ico', 'webp']);
});

// Options (engines/options.ts): the planner prefers a route that supports the options given, a
// format converts to itself only through its own edge, and each option goes to one step.
const quality = OPTIONS.quality;
const width = OPTIONS.width;
const pageRange = OPTIONS.page_range;

test('with options, the cheapest route supporting most of them wins; without, the cheapest', () => {
  const optioned = new RoutePlanner([
    declared('fast', [{ from: 'png', to: 'jpg', cost: 1 }]),
    declared('tuned', [{ from: 'png', to: 'jpg', cost: 3, options: [quality] }, { from: 'png', to: 'bmp', cost: 1, options: [width] }]),
    declared('bmp', [{ from: 'bmp', to: 'jpg', cost: 3, options: [quality] }]),
  ]);
  assert.deepEqual(optioned.route('png', 'jpg')!.map((s) => s.engine.id), ['fast']);
  assert.deepEqual(optioned.route('png', 'jpg', ['quality'])!.map((s) => s.engine.id), ['tuned'], 'the dearer route that has quality');
  assert.deepEqual(optioned.route('png', 'jpg', ['quality', 'width'])!.map((s) => s.engine.id), ['tuned'],
    'a longer route goes only through faithful steps: png → bmp is not declared one');
  const far = new RoutePlanner([
    declared('a', [{ from: 'x', to: 'y', cost: 1 }, { from: 'x', to: 'p', cost: 1 }, { from: 'p', to: 'q', cost: 1 }, { from: 'q', to: 'y', cost: 1, options: [quality] }]),
  ]);
  assert.deepEqual(far.route('x', 'y', ['quality'])!.map((s) => s.to), ['y'], 'never two steps more: no detour through several formats');
  assert.deepEqual(optioned.route('png', 'jpg', ['nonsense'])!.map((s) => s.engine.id), ['fast'], 'an option no route has changes nothing');
  assert.deepEqual(optioned.optionsBetween('png', 'jpg').map((o) => o.name), ['quality']);
  const twoSteps = new RoutePlanner([
    declared('office', [{ from: 'docx', to: 'pdf', cost: 4 }, { from: 'docx', to: 'odt', cost: 5 }]),
    declared('pages', [{ from: 'pdf', to: 'png', cost: 2 }, { from: 'odt', to: 'png', cost: 2, options: [width] }]),
  ]);
  assert.deepEqual(twoSteps.route('docx', 'png', ['width'])!.map((s) => s.to), ['odt', 'png'], 'a route as long as the cheapest may be taken for an option');
  assert.deepEqual(routeOptions(optioned.route('png', 'jpg', ['quality'])!).map((o) => o.name), ['quality']);
});

test('a format becomes itself only through its own edge, never inside a longer route', () => {
  const same = new RoutePlanner([
    declared('images', [{ from: 'png', to: 'png', cost: 1, options: [width] }, { from: 'png', to: 'jpg', cost: 1 }, { from: 'jpg', to: 'png', cost: 1 }]),
  ]);
  assert.deepEqual(same.targets('png'), ['jpg', 'png']);
  assert.deepEqual(same.targets('jpg'), ['png'], 'jpg → png → png is not a way to jpg, and jpg has no edge of its own');
  assert.deepEqual(same.route('png', 'png')!.map((s) => `${s.from}>${s.to}`), ['png>png']);
  assert.equal(same.route('jpg', 'jpg'), undefined);
  assert.deepEqual(same.route('jpg', 'png', ['width'])!.map((s) => `${s.from}>${s.to}`), ['jpg>png'], 'a self edge never joins a chain, even for an option');
});

test('each option goes to one step: input options to the first that takes them, output options to the last', () => {
  const chain = new RoutePlanner([
    declared('office', [{ from: 'docx', to: 'pdf', cost: 4, options: [pageRange, OPTIONS.pdf_a] }]),
    declared('pages', [{ from: 'pdf', to: 'png', cost: 2, options: [pageRange, OPTIONS.pixel_density, width], firstPageOnly: true }]),
    declared('images', [{ from: 'png', to: 'webp', cost: 1, options: [quality, width] }]),
  ]);
  const route = chain.route('docx', 'webp', ['page_range', 'quality', 'width'])!;
  const pages = { kind: 'pages', spans: [{ from: 3, to: 3 }] } as const;
  const perStep = assignOptions(route, { page_range: pages, quality: 40, width: 200 });
  assert.deepEqual(perStep, [{ page_range: pages }, { width: 200 }, { quality: 40 }]);
  // No page_range given: the step that renders a first page only has the office step export page 1 alone.
  const firstPage = assignOptions(chain.route('docx', 'png')!, {});
  assert.deepEqual(firstPage, [{ page_range: { kind: 'pages', spans: [{ from: 1, to: 1 }] } }, {}]);
  assert.deepEqual(assignOptions(chain.route('pdf', 'png')!, {}), [{}], 'nothing earlier to ask');
});

test('an option that shapes the output counts only where the last step writes it', () => {
  const data = new RoutePlanner([
    declared('data', [
      { from: 'json', to: 'csv', cost: 1, options: [OPTIONS.delimiter] }, { from: 'csv', to: 'tsv', cost: 1 },
      { from: 'json', to: 'tsv', cost: 1 },
      { from: 'md', to: 'odt', cost: 2, options: [{ ...OPTIONS.strip, name: 'toc' }] }, { from: 'odt', to: 'pdf', cost: 2 },
      { from: 'md', to: 'epub', cost: 3 }, { from: 'epub', to: 'pdf', cost: 3, options: [{ ...OPTIONS.strip, name: 'toc' }] },
    ]),
  ]);
  assert.deepEqual(data.route('json', 'tsv', ['delimiter'])!.map((s) => s.to), ['tsv'], 'never through csv for a delimiter');
  assert.deepEqual(data.optionsBetween('json', 'tsv'), []);
  assert.deepEqual(data.route('md', 'pdf')!.map((s) => s.to), ['odt', 'pdf']);
  assert.deepEqual(data.route('md', 'pdf', ['toc'])!.map((s) => s.to), ['epub', 'pdf'], 'the route whose last step makes the table of contents');
  assert.deepEqual(assignOptions(data.route('md', 'pdf', ['toc'])!, { toc: true }), [{}, { toc: true }]);
  assert.deepEqual(assignOptions(data.route('md', 'pdf')!, { toc: true }), [{}, {}], 'a middle step is never handed an output option');
});

test('an input option does not count after a step that makes its subject anew', () => {
  const sheets = new RoutePlanner([
    declared('office', [{ from: 'xls', to: 'csv', cost: 4 }, { from: 'xls', to: 'xlsx', cost: 4, faithful: true }]),
    declared('data', [
      { from: 'csv', to: 'json', cost: 1 }, { from: 'csv', to: 'xlsx', cost: 5, resets: ['sheet'] },
      { from: 'xlsx', to: 'json', cost: 1, options: [OPTIONS.sheet] }, { from: 'xlsx', to: 'csv', cost: 1, options: [OPTIONS.sheet, OPTIONS.delimiter] },
    ]),
  ]);
  assert.deepEqual(sheets.route('csv', 'json', ['sheet'])!.map((s) => s.to), ['json'], 'a CSV has no sheets: the workbook made from it is not a way to one');
  assert.deepEqual(sheets.optionsBetween('csv', 'json'), []);
  assert.deepEqual(sheets.route('xls', 'csv', ['sheet', 'delimiter'])!.map((s) => `${s.engine.id}:${s.to}`), ['office:xlsx', 'data:csv'], 'LibreOffice keeps the sheets');
});

test('strip goes to every step that takes it: metadata a middle step dropped cannot be kept by the last', () => {
  const chain = new RoutePlanner([
    declared('vips', [{ from: 'heic', to: 'png', cost: 2, options: [OPTIONS.strip, width] }]),
    declared('sharp', [{ from: 'png', to: 'jpg', cost: 1, options: [OPTIONS.strip, quality, width] }]),
  ]);
  const route = chain.route('heic', 'jpg', ['strip', 'quality', 'width'])!;
  assert.deepEqual(assignOptions(route, { strip: false, quality: 70, width: 100 }), [{ strip: false, width: 100 }, { strip: false, quality: 70 }]);
});

test('an edge never follows the engines it names in notAfter', () => {
  const pages = new RoutePlanner([
    declared('office', [{ from: 'docx', to: 'pdf', cost: 4 }]),
    declared('img2pdf', [{ from: 'png', to: 'pdf', cost: 2 }]),
    declared('pages', [{ from: 'pdf', to: 'zip', cost: 3, endsRoute: true, notAfter: ['img2pdf'] }, { from: 'pdf', to: 'png', cost: 2 }]),
  ]);
  assert.deepEqual(pages.route('docx', 'zip')!.map((s) => s.engine.id), ['office', 'pages']);
  assert.equal(pages.route('png', 'zip'), undefined, 'an image wrapped in a PDF is not a document of pages');
  assert.ok(pages.targets('docx').includes('zip'));
  assert.ok(!pages.targets('png').includes('zip'));
  assert.deepEqual(pages.targets('png'), ['pdf']);
});

test('an unchainable edge follows only the engines it names in chainsAfter, and only as the last step', () => {
  const vector = new RoutePlanner([
    declared('office', [{ from: 'docx', to: 'pdf', cost: 4 }]),
    declared('postscript', [{ from: 'eps', to: 'pdf', cost: 3 }]),
    declared('drawing', [{ from: 'pdf', to: 'emf', cost: 2, chainable: false, chainsAfter: ['postscript'] }, { from: 'emf', to: 'wmf', cost: 1 }]),
  ]);
  assert.deepEqual(vector.route('pdf', 'emf')!.map((s) => s.engine.id), ['drawing'], 'from the upload');
  assert.deepEqual(vector.route('eps', 'emf')!.map((s) => s.engine.id), ['postscript', 'drawing'], 'after an engine it names');
  assert.equal(vector.route('docx', 'emf'), undefined, 'never after one it does not name');
  assert.equal(vector.route('eps', 'wmf'), undefined, 'nothing comes after it');
  assert.deepEqual(vector.targets('eps'), ['emf', 'pdf']);
  assert.deepEqual(vector.targets('docx'), ['pdf']);
  assert.deepEqual(vector.targets('pdf'), ['emf']);
});

test('a longer route is taken only for an option that selects from the input, through faithful steps', () => {
  const office = new RoutePlanner([
    declared('office', [
      { from: 'pptx', to: 'png', cost: 4 }, { from: 'pptx', to: 'pdf', cost: 4, faithful: true },
      { from: 'pptx', to: 'epub', cost: 4 },
    ]),
    declared('pages', [{ from: 'pdf', to: 'png', cost: 2, options: [pageRange, OPTIONS.pixel_density], firstPageOnly: true }]),
    declared('ebooks', [{ from: 'epub', to: 'png', cost: 2, options: [OPTIONS.pixel_density, { ...OPTIONS.strip, name: 'toc' }] }]),
  ]);
  assert.deepEqual(office.route('pptx', 'png')!.map((s) => s.engine.id), ['office']);
  assert.deepEqual(office.route('pptx', 'png', ['page_range'])!.map((s) => s.engine.id), ['office', 'pages'], 'a slide is chosen through the PDF of every slide');
  assert.deepEqual(office.route('pptx', 'png', ['toc'])!.map((s) => s.engine.id), ['office'], 'an output option never lengthens a route');
  assert.deepEqual(office.optionsBetween('pptx', 'png').map((o) => o.name), ['page_range', 'pixel_density'], 'nothing through the epub step, which is not faithful');
});
