// Writes the ZIP of a result made of several files (api-contract.md, "Several files in one
// result": target `zip` with option `each`): members in the order given, each under the name
// given (`page-001.png`, or an archive member's path with its new extension), streamed from disk
// through fflate so that no member is held whole in memory, and stopped at once past the output
// cap. Formats that are compressed already (PNG, JPEG, WebP, ...) are stored, the rest deflated.
import { createReadStream, createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { Zip, ZipDeflate, ZipPassThrough } from 'fflate';
import { ConvertdError } from '../../errors.ts';

export interface ZipMember {
  /** The path inside the ZIP: forward slashes, no leading slash, no `..` (checked). */
  readonly name: string;
  /** The file on disk holding the member's bytes. */
  readonly file: string;
}

/** Extensions of formats that gain nothing from deflate: stored as they are. */
const STORED = new Set(['png', 'jpg', 'jpeg', 'webp', 'avif', 'heic', 'gif', 'jxl', 'mp3', 'mp4', 'ogg', 'opus', 'webm', 'zip', 'gz', 'xz', 'zst', 'bz2', '7z', 'docx', 'xlsx', 'pptx', 'odt', 'ods', 'odp', 'epub', 'woff', 'woff2', 'pdf']);

/** `page-001.png`: the name of page (or frame) `index` (1-based) of `count`, padded to sort in order. */
export function pageName(prefix: string, index: number, count: number, extension: string): string {
  return `${prefix}-${String(index).padStart(Math.max(3, String(count).length), '0')}.${extension}`;
}

/**
 * Writes `members` into a new ZIP at `output`; rejects with output_too_large past `maxBytes`.
 * `onMember` is told after each member is written (for progress). Resolves with the ZIP's size.
 */
export async function writeZip(output: string, members: readonly ZipMember[], maxBytes: number, onMember?: (done: number) => void, signal?: AbortSignal): Promise<number> {
  for (const member of members) {
    if (member.name === '' || member.name.startsWith('/') || member.name.split('/').some((part) => part === '..' || part === '')) {
      throw new Error(`refusing to write a ZIP member named ${JSON.stringify(member.name)}`);
    }
  }
  const sink = createWriteStream(output);
  let written = 0;
  let failure: Error | undefined;
  const zip = new Zip((error, chunk) => {
    if (error) {
      failure = error;
      return;
    }
    written += chunk.length;
    if (written > maxBytes) failure ??= new ConvertdError('output_too_large');
    if (!failure) sink.write(chunk);
  });
  try {
    for (const [index, member] of members.entries()) {
      signal?.throwIfAborted();
      if (failure) throw failure;
      const extension = member.name.slice(member.name.lastIndexOf('.') + 1).toLowerCase();
      const entry = STORED.has(extension) ? new ZipPassThrough(member.name) : new ZipDeflate(member.name, { level: 6 });
      zip.add(entry);
      const source = createReadStream(member.file, { highWaterMark: 256 * 1024 });
      for await (const chunk of source) {
        entry.push(chunk as Uint8Array);
        if (failure) {
          source.destroy();
          throw failure;
        }
        // Respect the file's back-pressure: fflate hands chunks over synchronously.
        if (sink.writableNeedDrain) await once(sink, 'drain');
      }
      entry.push(new Uint8Array(0), true);
      onMember?.(index + 1);
    }
    zip.end();
    if (failure) throw failure;
    sink.end();
    await once(sink, 'finish');
    return written;
  } catch (error) {
    sink.destroy();
    throw error;
  }
}
