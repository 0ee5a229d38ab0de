// The formats the archives engine adds to the catalogue (id, name, category, media type, extensions,
// and how the sniffer recognises them).
import type { FormatDefinition } from '../../formats/catalogue.ts';

/**
 * An LZMA-alone stream (`.lzma`, what `lzma` and `bsdtar --lzma` write) has no magic number: a
 * properties byte (lc/lp/pb, 0x5D for the defaults every tool uses), a dictionary size (a power of
 * two, or 3 × one, from 4 KiB), then the unpacked size (all ones when unknown, otherwise far below
 * 2^48). All three must hold, as libarchive's own test does.
 */
function lzmaAlone(head: Buffer): boolean {
  if (head.length < 13 || head[0] !== 0x5d) return false;
  const dictionary = head.readUInt32LE(1);
  const powerOfTwo = (n: number) => n > 0 && (n & (n - 1)) === 0;
  if (dictionary < 4096 || !(powerOfTwo(dictionary) || (dictionary % 3 === 0 && powerOfTwo(dictionary / 3)))) return false;
  const unknownSize = head.subarray(5, 13).every((byte) => byte === 0xff);
  return unknownSize || (head[11] === 0 && head[12] === 0);
}

/**
 * A Zstandard stream may open with a skippable frame (magic 0x184D2A50 to 0x184D2A5F, a length,
 * that many bytes), as libarchive's and zstd's own tests do; the sniffer's library then sees no
 * magic. Taken as Zstandard when a Zstandard frame follows it (LZ4 frames use skippable frames too).
 */
function zstdAfterSkippableFrame(head: Buffer): boolean {
  if (head.length < 12 || head.readUInt32LE(0) >>> 4 !== 0x184d2a5) return false;
  const next = 8 + head.readUInt32LE(4);
  return next + 4 <= head.length && head.readUInt32LE(next) === 0xfd2fb528;
}

/** The formats this engine adds to the catalogue. */
export const FORMATS: readonly FormatDefinition[] = [
  { id: 'zip', name: 'ZIP archive', category: 'archive', mediaType: 'application/zip', extensions: ['zip'], detect: 'magic' },
  { id: '7z', name: '7-Zip archive', category: 'archive', mediaType: 'application/x-7z-compressed', extensions: ['7z'], detect: 'magic' },
  { id: 'tar', name: 'tar archive', category: 'archive', mediaType: 'application/x-tar', extensions: ['tar'], detect: 'magic' },
  { id: 'tar.gz', name: 'gzip-compressed tar archive', category: 'archive', mediaType: 'application/gzip', extensions: ['tar.gz', 'tgz', 'gz'], detect: 'magic' },
  { id: 'tar.bz2', name: 'bzip2-compressed tar archive', category: 'archive', mediaType: 'application/x-bzip2', extensions: ['tar.bz2', 'tbz2', 'tbz', 'bz2'], detect: 'magic' },
  { id: 'tar.xz', name: 'xz-compressed tar archive', category: 'archive', mediaType: 'application/x-xz', extensions: ['tar.xz', 'txz', 'xz'], detect: 'magic' },
  // The compressed tars below are told by their compressor's magic (the sniffer's file-type library
  // knows zst, lz and Z; lzma has its own test above), like tar.gz: what is inside shows when read.
  { id: 'tar.zst', name: 'Zstandard-compressed tar archive', category: 'archive', mediaType: 'application/zstd', extensions: ['tar.zst', 'tzst', 'zst'], detect: 'magic', signature: zstdAfterSkippableFrame },
  { id: 'tar.lz', name: 'lzip-compressed tar archive', category: 'archive', mediaType: 'application/x-lzip', extensions: ['tar.lz', 'lz'], detect: 'magic' },
  { id: 'tar.lzma', name: 'LZMA-compressed tar archive', category: 'archive', mediaType: 'application/x-lzma', extensions: ['tar.lzma', 'tlz', 'lzma'], detect: 'magic', signature: lzmaAlone },
  // Unix compress (LZW): the id is lower case since targets are matched without case; the file keeps the customary .Z.
  { id: 'tar.lz4', name: 'LZ4-compressed tar archive', category: 'archive', mediaType: 'application/x-lz4', extensions: ['tar.lz4', 'tlz4', 'lz4'], detect: 'magic' },
  { id: 'tar.z', name: 'compress (.Z) tar archive', category: 'archive', mediaType: 'application/x-compress', extensions: ['tar.z', 'taz', 'z'], detect: 'magic', fileExtension: 'tar.Z' },
  // file-type knows the binary and "070707" (odc) kinds; the SVR4 ones ("070701", "070702" with
  // checksums), which cpio(1) and the Linux initramfs write, are told here.
  { id: 'cpio', name: 'cpio archive', category: 'archive', mediaType: 'application/x-cpio', extensions: ['cpio'], detect: 'magic', signature: (head) => /^07070[127]/.test(head.toString('latin1', 0, 6)) },
  { id: 'iso', name: 'ISO 9660 disc image', category: 'archive', mediaType: 'application/x-iso9660-image', extensions: ['iso'], detect: 'magic' },
  { id: 'rar', name: 'RAR archive', category: 'archive', mediaType: 'application/vnd.rar', extensions: ['rar'], detect: 'magic' },
  { id: 'cab', name: 'Microsoft Cabinet archive', category: 'archive', mediaType: 'application/vnd.ms-cab-compressed', extensions: ['cab'], detect: 'magic' },
  { id: 'lzh', name: 'LHA archive', category: 'archive', mediaType: 'application/x-lzh-compressed', extensions: ['lzh', 'lha'], detect: 'magic' },
  { id: 'xar', name: 'xar archive', category: 'archive', mediaType: 'application/x-xar', extensions: ['xar'], detect: 'magic', signature: (head) => head.toString('latin1', 0, 4) === 'xar!' },
  { id: 'ar', name: 'Unix ar archive', category: 'archive', mediaType: 'application/x-archive', extensions: ['ar', 'a'], detect: 'magic' },
  // A Debian package read as the ar archive it is: its members are debian-binary, control.tar.* and data.tar.*.
  { id: 'deb', name: 'Debian package (its members)', category: 'archive', mediaType: 'application/vnd.debian.binary-package', extensions: ['deb', 'udeb'], detect: 'magic' },
  // An RPM package read as the files of its cpio payload (what rpm2cpio | cpio -i unpacks); its headers are not kept.
  { id: 'rpm', name: 'RPM package (its files)', category: 'archive', mediaType: 'application/x-rpm', extensions: ['rpm'], detect: 'magic' },
  // Read by 7-Zip. SquashFS 4 (every Linux since 2.6.29; the superblock's major version at byte 28);
  // 3 and older are big-endian kernels' and not read here.
  { id: 'squashfs', name: 'SquashFS filesystem image', category: 'archive', mediaType: 'application/vnd.squashfs', extensions: ['squashfs', 'sqfs', 'sfs'], detect: 'magic', signature: (head) => head.length >= 30 && head.toString('latin1', 0, 4) === 'hsqs' && head.readUInt16LE(28) === 4 },
  { id: 'wim', name: 'Windows Imaging (WIM) image', category: 'archive', mediaType: 'application/x-ms-wim', extensions: ['wim'], detect: 'magic', signature: (head) => head.toString('latin1', 0, 8) === 'MSWIM\0\0\0' },
  { id: 'arj', name: 'ARJ archive', category: 'archive', mediaType: 'application/x-arj', extensions: ['arj'], detect: 'magic' },
];
