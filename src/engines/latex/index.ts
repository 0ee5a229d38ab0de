// LaTeX → PDF with LuaLaTeX under latexmk, in the sandbox, with TeX's own file and shell limits.
import { defineEngine } from '../module.ts';
import { FONT_PACKAGES } from '../support/fonts/index.ts';
import { LatexEngine } from './engine.ts';
import { FORMATS } from './formats.ts';

export default defineEngine({
  id: 'latex',
  summary: 'latexmk -lualatex (no shell escape, kpathsea openin_any=p/openout_any=p, at most 4 runs), Noto fallback fonts for non-Latin scripts (luaotfload), the font cache built once by the probe (by the first job when the probe is remembered)',
  // texlive-luatex + texlive-latex-recommended + latexmk: 217 MB installed (80 MB of packages, 57 s
  // to install here), where texlive-xetex pulls texlive-latex-extra and more; texlive-plain-generic
  // (65 MB more, 29 MB of package, 18 s) brings ulem, which pandoc's own LaTeX loads for strikeout. The fallback fonts are
  // the Noto ones the other text engines install (support/fonts).
  packages: { debian: ['texlive-luatex', 'texlive-latex-recommended', 'texlive-plain-generic', 'latexmk', ...FONT_PACKAGES] },
  formats: FORMATS,
  create: (context) => new LatexEngine(context),
});
