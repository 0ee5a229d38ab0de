// Whether an office document that LibreOffice could not open is protected by a password, so that
// the job says encrypted_input (remove the password) rather than corrupt_input. LibreOffice, loading
// silently, answers both with an empty document; the file's structure tells them apart:
// - ODF (a zip): META-INF/manifest.xml describes encryption-data for its encrypted parts;
// - OOXML with a password is an OLE compound file holding an "EncryptedPackage" stream;
// - Word 97-2003: the fEncrypted bit of the FIB, at the start of the WordDocument stream;
// - Excel 97-2003: a FILEPASS record right after the BOF record of the Workbook stream.
// Only read after a failed load, from a file already size-capped by the upload limit.
import fs from 'node:fs/promises';
import { strFromU8, unzipSync } from 'fflate';

const CFB_SIGNATURE = Buffer.from('d0cf11e0a1b11ae1', 'hex');
const ZIP_SIGNATURE = Buffer.from('504b0304', 'hex');
const END_OF_CHAIN = 0xfffffffe;

/** The first sector (or mini sector, 64 bytes) of each named stream of an OLE compound file: enough to read a header. */
function compoundStreams(file: Buffer): Map<string, Buffer> {
  const streams = new Map<string, Buffer>();
  const sectorSize = 1 << file.readUInt16LE(0x1e);
  if (sectorSize !== 512 && sectorSize !== 4096) return streams;
  const sector = (index: number) => file.subarray((index + 1) * sectorSize, (index + 2) * sectorSize);
  // The FAT, from the header's first 109 DIFAT entries (files up to about 7 MB of 512-byte sectors: enough to find the directory chain).
  const fatSectors: number[] = [];
  for (let i = 0; i < 109; i++) {
    const index = file.readUInt32LE(0x4c + i * 4);
    if (index >= END_OF_CHAIN) break;
    fatSectors.push(index);
  }
  const next = (index: number): number => {
    const perSector = sectorSize / 4;
    const fat = fatSectors[Math.floor(index / perSector)];
    if (fat === undefined) return END_OF_CHAIN;
    const entry = sector(fat);
    return entry.length >= (index % perSector + 1) * 4 ? entry.readUInt32LE((index % perSector) * 4) : END_OF_CHAIN;
  };
  /** The sector holding byte `offset` of the chain that starts at `start` (bounded hops, against loops). */
  const sectorAt = (start: number, offset: number): Buffer => {
    let index = start;
    for (let hops = Math.floor(offset / sectorSize); hops > 0 && index < END_OF_CHAIN; hops--) index = next(index);
    return index < END_OF_CHAIN ? sector(index) : Buffer.alloc(0);
  };
  // The directory: 128-byte entries, along its sector chain (bounded, against loops).
  const entries: Array<{ name: string; type: number; start: number; size: number }> = [];
  let directory = file.readUInt32LE(0x30);
  for (let hops = 0; directory < END_OF_CHAIN && hops < 1000; hops++, directory = next(directory)) {
    const block = sector(directory);
    for (let offset = 0; offset + 128 <= block.length; offset += 128) {
      const nameBytes = block.readUInt16LE(offset + 0x40);
      if (nameBytes < 2 || nameBytes > 64) continue;
      entries.push({
        name: block.toString('utf16le', offset, offset + nameBytes - 2),
        type: block[offset + 0x42]!, // 2: a stream, 5: the root, whose chain is the mini stream
        start: block.readUInt32LE(offset + 0x74),
        size: block.readUInt32LE(offset + 0x78),
      });
    }
  }
  const root = entries.find((entry) => entry.type === 5);
  for (const entry of entries.filter((e) => e.type === 2 && e.start < END_OF_CHAIN)) {
    if (entry.size >= 4096) streams.set(entry.name, sector(entry.start));
    else if (root) {
      // Streams under 4096 bytes live in 64-byte mini sectors inside the root's chain.
      const offset = entry.start * 64;
      const holder = sectorAt(root.start, offset);
      streams.set(entry.name, holder.subarray(offset % sectorSize, offset % sectorSize + 64));
    }
  }
  return streams;
}

export async function isPasswordProtected(path: string): Promise<boolean> {
  const file = await fs.readFile(path);
  if (file.subarray(0, 4).equals(ZIP_SIGNATURE)) {
    try {
      const manifest = unzipSync(new Uint8Array(file), { filter: (entry) => entry.name === 'META-INF/manifest.xml' })['META-INF/manifest.xml'];
      return manifest !== undefined && strFromU8(manifest).includes('encryption-data');
    } catch {
      return false;
    }
  }
  if (!file.subarray(0, 8).equals(CFB_SIGNATURE) || file.length < 1024) return false;
  const streams = compoundStreams(file);
  if (streams.has('EncryptedPackage')) return true;
  const word = streams.get('WordDocument');
  // FIB: wIdent 0xA5EC, then at 0x0A the flags whose bit 8 is fEncrypted.
  if (word && word.length >= 12 && word.readUInt16LE(0) === 0xa5ec && (word.readUInt16LE(0x0a) & 0x0100) !== 0) return true;
  const workbook = streams.get('Workbook') ?? streams.get('Book');
  if (workbook && workbook.length >= 8) {
    // BOF record (type 0x0809) of length n, then the next record's type: 0x002F is FILEPASS.
    const bofLength = workbook.readUInt16LE(2);
    const after = 4 + bofLength;
    if (workbook.readUInt16LE(0) === 0x0809 && workbook.length >= after + 2 && workbook.readUInt16LE(after) === 0x002f) return true;
  }
  return false;
}
