// An uploaded SVG made self-contained before a program that follows references reads it
// (docs/security.md#inkscape). librsvg loads no URL and, in the sandbox, no file but the upload;
// Inkscape is another matter: it embeds `<image xlink:href="/etc/passwd.png">`, falls back to
// `sodipodi:absref`, follows XInclude and CSS @import, and libxml2 expands the document's entities.
// The sandbox shows it no file but the upload and no network, so what is left to take is nothing;
// this rewrite is the second wall, and it makes the outcome the same everywhere: a reference that
// is neither `#fragment` nor `data:` is dropped, so the drawing comes out without what it links
// to. Entities: an internal subset of plain text entities (Illustrator's SVG declares its
// namespaces so) is expanded here; anything else in a DOCTYPE (an external or parameter entity,
// an entity made of other entities: the billion laughs) is refused as corrupt_input.
import { ConvertdError } from '../../errors.ts';

/** What the rewritten document may grow to by entity expansion before it is refused. */
const MAX_EXPANDED_CHARS = 64 * 1024 * 1024;

const XINCLUDE_NS = /http:\/\/www\.w3\.org\/2001\/XInclude/gi;
/** Attributes that name something to load: any prefix's href (xlink:href, plain href), and Inkscape's own fallbacks. */
const REFERENCING = /^(?:[\w.-]+:)?(?:href|absref|src)$/i;

function refuse(detail: string): never {
  throw new ConvertdError('corrupt_input', `The SVG ${detail}; this service converts only drawings that carry everything they show.`);
}

/** The numeric character references and the XML entities of an attribute value, decoded. */
function decodeValue(value: string): string {
  return value.replace(/&(?:#x([0-9a-f]+)|#(\d+)|(lt|gt|amp|quot|apos));/gi, (_all, hex: string | undefined, dec: string | undefined, named: string | undefined) => {
    if (named) return { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" }[named.toLowerCase()]!;
    const code = hex ? Number.parseInt(hex, 16) : Number(dec);
    return Number.isFinite(code) && code <= 0x10ffff ? String.fromCodePoint(code) : '';
  });
}

/** A reference that stays inside the document: a fragment or inline data. */
function isLocal(reference: string): boolean {
  // White space and control characters are ignored by URL parsers ("fi\tle:"): dropped before the test.
  const value = [...reference].filter((c) => c.charCodeAt(0) > 0x20).join('');
  return value === '' || value.startsWith('#') || /^data:/i.test(value);
}

/**
 * CSS with every url() that is not local replaced by an empty fragment, and @import made an unknown
 * at-rule (ignored). CSS escapes (`u\72l(`) are refused rather than read: no drawing needs them.
 */
function neutraliseCss(css: string): string {
  if (/\\[0-9a-f]/i.test(css) && /url|import/i.test(css.replace(/\\[0-9a-f]{1,6}\s?/gi, 'x'))) refuse('uses CSS escapes around a URL');
  return css
    .replace(/@import\b/gi, '@convertd-removed-import')
    .replace(/url\(\s*(["']?)([^"')]*)\1\s*\)/gi, (all, _quote: string, target: string) => (isLocal(target) ? all : 'url(#convertd-removed)'));
}

/** The DOCTYPE's internal entities, when each is plain text; refuses anything else a DOCTYPE may declare. */
function plainEntities(doctype: string): Map<string, string> {
  const entities = new Map<string, string>();
  const subset = /\[([\s\S]*)\]/.exec(doctype)?.[1] ?? '';
  const withoutComments = subset.replace(/<!--[\s\S]*?-->/g, '');
  const declaration = /<!ENTITY\s+([\w.:-]+)\s+(?:"([^"]*)"|'([^']*)')\s*>/g;
  const rest = withoutComments.replace(declaration, (_all, name: string, double: string | undefined, single: string | undefined) => {
    const value = double ?? single ?? '';
    if (/[&%<]/.test(value)) refuse('declares an entity built of other entities or markup (an entity-expansion bomb)');
    entities.set(name, value);
    return '';
  });
  if (rest.trim() !== '') refuse('declares external or parameter entities, or other declarations, in its DOCTYPE');
  return entities;
}

/**
 * The document with its DOCTYPE replaced by the expansion of its plain entities, processing
 * instructions (xml-stylesheet) removed, XInclude's namespace made inert, every referencing
 * attribute that is not local dropped, and style neutralised. The XML declaration is kept.
 */
export function selfContainedSvg(source: string): string {
  let text = source.replace(/^\uFEFF/, '');
  const doctype = /<!DOCTYPE\s[^[>]*(?:\[[\s\S]*?\]\s*)?>/i.exec(text);
  let entities = new Map<string, string>();
  if (doctype) {
    entities = plainEntities(doctype[0]);
    text = text.slice(0, doctype.index) + text.slice(doctype.index + doctype[0].length);
  }
  if (/<!ENTITY/i.test(text)) refuse('declares entities outside its DOCTYPE');
  if (entities.size > 0) {
    let grown = 0;
    text = text.replace(/&([\w.:-]+);/g, (all, name: string) => {
      const value = entities.get(name);
      if (value === undefined) return all;
      grown += value.length;
      if (grown > MAX_EXPANDED_CHARS) refuse('expands its entities past 64 MiB');
      // Entity text goes where it stands; in an attribute value a quote would end the value.
      return value.replace(/[<&"']/g, (c) => ({ '<': '&lt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' })[c]!);
    });
  }
  // Processing instructions other than the declaration (<?xml-stylesheet href="…"?> loads a style sheet).
  text = text.replace(/<\?(?!xml\s)[\s\S]*?\?>/gi, '');
  text = text.replace(XINCLUDE_NS, 'urn:convertd:removed-xinclude');
  return rewriteMarkup(text);
}

/** Walks the markup: each start tag's referencing attributes checked, style attributes and text neutralised. */
function rewriteMarkup(text: string): string {
  const out: string[] = [];
  let at = 0;
  const attribute = /\s+([^\s=/>]+)\s*=\s*("[^"]*"|'[^']*')/y;
  while (at < text.length) {
    const open = text.indexOf('<', at);
    if (open < 0) {
      out.push(neutraliseCss(text.slice(at)));
      break;
    }
    out.push(neutraliseCss(text.slice(at, open)));
    if (text.startsWith('<!--', open)) {
      const end = text.indexOf('-->', open);
      at = end < 0 ? text.length : end + 3;
      continue;
    }
    if (text.startsWith('<![CDATA[', open)) {
      const end = text.indexOf(']]>', open);
      const stop = end < 0 ? text.length : end + 3;
      out.push(neutraliseCss(text.slice(open, stop)));
      at = stop;
      continue;
    }
    const name = /^<\/?[^\s/>]*/.exec(text.slice(open, open + 256))![0];
    // A declaration left here (a second DOCTYPE, one the pattern above did not take) is refused:
    // only the one expanded above may reach the reader.
    if (name.startsWith('<!')) refuse('has a declaration this service does not take');
    if (name.startsWith('</') || name.startsWith('<?')) {
      const end = text.indexOf('>', open);
      const stop = end < 0 ? text.length : end + 1;
      out.push(text.slice(open, stop));
      at = stop;
      continue;
    }
    out.push(name);
    at = open + name.length;
    attribute.lastIndex = at;
    for (let match = attribute.exec(text); match; match = attribute.exec(text)) {
      const [, key, quoted] = match as unknown as [string, string, string];
      const value = decodeValue(quoted.slice(1, -1));
      at = attribute.lastIndex;
      if (REFERENCING.test(key) && !isLocal(value)) continue;
      if (/^style$/i.test(key) || /url\(|@import/i.test(value)) {
        out.push(` ${key}="${neutraliseCss(value).replace(/[<&"]/g, (c) => ({ '<': '&lt;', '&': '&amp;', '"': '&quot;' })[c]!)}"`);
      } else {
        out.push(match[0]);
      }
    }
    const close = /^\s*(\/?>)/.exec(text.slice(at, at + 64));
    if (!close) refuse('has a start tag this service cannot read');
    out.push(close[1]!);
    at += close[0].length;
  }
  return out.join('');
}
