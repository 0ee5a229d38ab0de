// Every socket read of an upload is a fresh 64 KiB buffer outside V8's heap, freed only when V8
// collects the small object that holds it. An upload makes little else, so the young generation
// fills slowly and the buffers pile up until their total alone triggers a collection (64 MiB
// over the previous one): 20 concurrent 25 MB uploads grew the service's RSS by up to 69 MiB.
// So the upload path asks for a young-generation collection (under a millisecond) after every
// COLLECT_EVERY_BYTES received. A smaller young generation for the whole process
// (--max-semi-space-size=2) also bounded the RSS, but raised the progress endpoint's p99 from
// about 1 ms to about 4 (BENCHMARKS.md, change 19).
//
// `gc` is there because the service starts with --expose-gc (src/node-flags.ts); a process
// started without it simply does not collect early.
const COLLECT_EVERY_BYTES = 16 * 1024 * 1024;

type Collect = (options: { type: 'minor'; execution: 'async' }) => void;
const collect = (globalThis as { gc?: Collect }).gc;
let receivedSinceCollection = 0;

/** Counts upload bytes received; every COLLECT_EVERY_BYTES, schedules a young-generation collection. */
export function uploadBytesReceived(bytes: number): void {
  if (!collect) return;
  receivedSinceCollection += bytes;
  if (receivedSinceCollection < COLLECT_EVERY_BYTES) return;
  receivedSinceCollection = 0;
  collect({ type: 'minor', execution: 'async' });
}
