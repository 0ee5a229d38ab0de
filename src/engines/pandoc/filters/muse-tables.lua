-- convertd: pandoc 2.17's Muse writer drops a table's header row whenever it writes the table as a
-- grid (which it does for any table with column widths, as every docx or odt table has, and for
-- cells holding more than one paragraph or a list). Without widths, a table of plain cells is
-- written as Muse's own table, header row and all; a table with richer cells keeps its header
-- row as its first ordinary row.
local function plain(cell)
  local blocks = cell.contents
  return #blocks <= 1 and (blocks[1] == nil or blocks[1].t == 'Plain' or blocks[1].t == 'Para')
end

function Table(table)
  for i, spec in ipairs(table.colspecs) do table.colspecs[i] = { spec[1], pandoc.ColWidthDefault } end
  local rows = pandoc.List()
  rows:extend(table.head.rows)
  for _, body in ipairs(table.bodies) do
    rows:extend(body.head)
    rows:extend(body.body)
  end
  rows:extend(table.foot.rows)
  for _, row in ipairs(rows) do
    for _, cell in ipairs(row.cells) do
      if not plain(cell) and #table.bodies > 0 then
        local body = table.bodies[1]
        local moved = pandoc.List()
        moved:extend(table.head.rows)
        moved:extend(body.body)
        body.body = moved
        table.bodies[1] = body
        table.head.rows = {}
        return table
      end
    end
  end
  return table
end
