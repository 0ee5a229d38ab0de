// The real length of a fragmented MP4 (ISO BMFF with `mvex`: the samples live in `moof`
// fragments, not in the `moov` tables). Its header may declare anything: a muxer that did not
// know the length writes all ones, which ffmpeg 5.1 reads as 143,166 s at a timescale of 30,000,
// and the duration cap refused a one-second clip (issue #32). Here the fragments' own sample
// durations are added up, per track, without decoding anything; the cap and the progress use
// that. Only box headers and the few fields needed are read.
import { withReadAt } from '../../formats/read-at.ts';

interface Track {
  timescale: number;
  defaultSampleDuration: number;
  /** End of the last fragment seen, in the track's timescale. */
  end: number;
}

/** Seconds the fragments hold (the longest track), or undefined for a file that is not a fragmented MP4 (or not one this can follow). */
export async function fragmentedMp4Seconds(file: string): Promise<number | undefined> {
  return withReadAt(file, async (read, size) => {
    const first = await read(0, 8);
    if (first.length < 8 || first.toString('latin1', 4, 8) !== 'ftyp') return undefined;
    const tracks = new Map<number, Track>();
    let fragmented = false;
    let fragments = 0;
    for (let at = 0; at + 8 <= size;) {
      const header = await read(at, 16);
      if (header.length < 8) break;
      let boxSize = header.readUInt32BE(0);
      const type = header.toString('latin1', 4, 8);
      let headerSize = 8;
      if (boxSize === 1 && header.length >= 16) {
        boxSize = Number(header.readBigUInt64BE(8));
        headerSize = 16;
      } else if (boxSize === 0) {
        boxSize = size - at;
      }
      if (boxSize < headerSize) return undefined; // not a box structure this can follow
      // moov and moof are small next to the media data: read whole, parsed in memory.
      if (type === 'moov' && boxSize <= 64 * 1024 * 1024) {
        fragmented = readMovie(await read(at + headerSize, boxSize - headerSize), tracks);
      } else if (type === 'moof' && fragmented && boxSize <= 16 * 1024 * 1024) {
        readFragment(await read(at + headerSize, boxSize - headerSize), tracks);
        fragments++;
      }
      at += boxSize;
    }
    if (!fragmented || fragments === 0) return undefined;
    const seconds = [...tracks.values()].filter((track) => track.timescale > 0).map((track) => track.end / track.timescale);
    return seconds.length > 0 ? Math.max(...seconds) : undefined;
  });
}

/** The children of a box's payload: [type, payload]. */
function* children(payload: Buffer): Generator<[string, Buffer]> {
  for (let at = 0; at + 8 <= payload.length;) {
    let size = payload.readUInt32BE(at);
    let headerSize = 8;
    if (size === 1 && at + 16 <= payload.length) {
      size = Number(payload.readBigUInt64BE(at + 8));
      headerSize = 16;
    } else if (size === 0) {
      size = payload.length - at;
    }
    if (size < headerSize || at + size > payload.length) return;
    yield [payload.toString('latin1', at + 4, at + 8), payload.subarray(at + headerSize, at + size)];
    at += size;
  }
}

function child(payload: Buffer, type: string): Buffer | undefined {
  for (const [found, body] of children(payload)) if (found === type) return body;
  return undefined;
}

/** Reads each track's id and timescale, and the defaults of `mvex/trex`; true when the movie is fragmented. */
function readMovie(moov: Buffer, tracks: Map<number, Track>): boolean {
  for (const [type, body] of children(moov)) {
    if (type !== 'trak') continue;
    const tkhd = child(body, 'tkhd');
    const mdhd = child(child(body, 'mdia') ?? Buffer.alloc(0), 'mdhd');
    if (!tkhd || !mdhd || tkhd.length < 24 || mdhd.length < 24) continue;
    const id = tkhd[0] === 1 ? tkhd.readUInt32BE(20) : tkhd.readUInt32BE(12);
    const timescale = mdhd[0] === 1 ? mdhd.readUInt32BE(20) : mdhd.readUInt32BE(12);
    tracks.set(id, { timescale, defaultSampleDuration: 0, end: 0 });
  }
  const mvex = child(moov, 'mvex');
  if (!mvex) return false;
  for (const [type, trex] of children(mvex)) {
    if (type !== 'trex' || trex.length < 24) continue;
    const track = tracks.get(trex.readUInt32BE(4));
    if (track) track.defaultSampleDuration = trex.readUInt32BE(12);
  }
  return true;
}

/** Adds one fragment's samples to its tracks' ends (from tfdt when it says where the fragment starts). */
function readFragment(moof: Buffer, tracks: Map<number, Track>): void {
  for (const [type, traf] of children(moof)) {
    if (type !== 'traf') continue;
    const tfhd = child(traf, 'tfhd');
    if (!tfhd || tfhd.length < 8) continue;
    const track = tracks.get(tfhd.readUInt32BE(4));
    if (!track) continue;
    const flags = tfhd.readUIntBE(1, 3);
    let at = 8;
    if (flags & 0x01) at += 8; // base data offset
    if (flags & 0x02) at += 4; // sample description index
    const defaultDuration = flags & 0x08 && tfhd.length >= at + 4 ? tfhd.readUInt32BE(at) : track.defaultSampleDuration;
    const tfdt = child(traf, 'tfdt');
    let time = track.end;
    if (tfdt && tfdt.length >= 8) time = tfdt[0] === 1 && tfdt.length >= 12 ? Number(tfdt.readBigUInt64BE(4)) : tfdt.readUInt32BE(4);
    for (const [runType, trun] of children(traf)) {
      if (runType !== 'trun' || trun.length < 8) continue;
      const runFlags = trun.readUIntBE(1, 3);
      const count = trun.readUInt32BE(4);
      let field = 8;
      if (runFlags & 0x01) field += 4; // data offset
      if (runFlags & 0x04) field += 4; // first sample flags
      const perSample = (runFlags & 0x100 ? 4 : 0) + (runFlags & 0x200 ? 4 : 0) + (runFlags & 0x400 ? 4 : 0) + (runFlags & 0x800 ? 4 : 0);
      if (!(runFlags & 0x100)) {
        time += count * defaultDuration;
      } else {
        for (let sample = 0; sample < count && field + 4 <= trun.length; sample++, field += perSample) time += trun.readUInt32BE(field);
      }
    }
    track.end = Math.max(track.end, time);
  }
}
