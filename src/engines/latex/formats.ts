// The latex engine adds no format: `latex` (.tex, .latex, .ltx) is pandoc's (pandoc/formats.ts),
// which also reads it into every markup target; this engine only typesets it to PDF.
import type { FormatDefinition } from '../../formats/catalogue.ts';

/** The formats this engine adds to the catalogue: none. */
export const FORMATS: readonly FormatDefinition[] = [];
