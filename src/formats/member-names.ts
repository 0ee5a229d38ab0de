// The names of an archive's members, which the upload chooses: one made safe to use as a path
// under the folder it is unpacked into, or the reason it is refused (docs/security.md, Archives).
// Used by the archive engine for every member it unpacks and by the gdal engine before GDAL opens
// a KMZ or a zipped shapefile through /vsizip/.

/** A member name made safe (backslashes as slashes, a leading "./" dropped), or the reason it is refused. */
export function memberName(raw: string): string | { refused: string } {
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(raw)) return { refused: 'a member name holds control characters' };
  const name = raw.replace(/\\/g, '/').replace(/^(\.\/)+/, '');
  if (name.startsWith('/') || /^[A-Za-z]:/.test(name)) return { refused: `the member "${raw}" has an absolute path` };
  if (name.split('/').some((part) => part === '..')) return { refused: `the member "${raw}" points outside the archive` };
  return name;
}
