-- convertd: pandoc 2.17's TEI and XWiki writers leave a table's caption out. For them, the caption
-- becomes a paragraph of its own just before the table, so its words are not lost.
function Table(table)
  local caption = table.caption.long
  if caption == nil or #caption == 0 then return nil end
  table.caption.long = pandoc.Blocks({})
  table.caption.short = nil
  local blocks = pandoc.List(caption)
  blocks:insert(table)
  return blocks
end
