-- The document's title as its first heading, for writers that print no title block (Markdown,
-- plain text, AsciiDoc...): without it, a title held in the metadata (a docx's Title paragraph,
-- a DocBook <title>, a YAML title) would be lost. Nothing is added when the document already
-- opens with a heading of the same text.
function Pandoc(doc)
  local title = doc.meta.title
  if title == nil then return nil end
  local text = pandoc.utils.stringify(title)
  if text == '' then return nil end
  local first = doc.blocks[1]
  if first and first.t == 'Header' and pandoc.utils.stringify(first) == text then return nil end
  local content
  if title.t == 'MetaInlines' then
    content = title
  elseif title.t == 'MetaBlocks' then
    content = pandoc.utils.blocks_to_inlines(title)
  else
    content = pandoc.List({ pandoc.Str(text) })
  end
  doc.blocks:insert(1, pandoc.Header(1, content))
  return doc
end
