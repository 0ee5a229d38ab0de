-- convertd: a bibliography (BibTeX, BibLaTeX, CSL JSON) uploaded alone has no text that cites it:
-- `nocite: @*` asks citeproc, which runs after this filter, to list every entry of it. citeproc
-- uses its built-in Chicago author-date style: no style file is read.
function Meta(meta)
  meta.nocite = pandoc.MetaInlines({ pandoc.Cite({ pandoc.Str('@*') }, { pandoc.Citation('*', 'NormalCitation') }) })
  return meta
end
