-- convertd: a conversion reads the upload and nothing else (docs/security.md#pandoc). Beside
-- images (no-external-images.lua), a document names files and URLs in raw HTML (img, video,
-- audio and source src and poster, which pandoc 2.17's EPUB writer fetches and embeds; link,
-- object, iframe, embed, SVG image and use), in CSS (url(), @import, in a style attribute or a
-- <style> block), in the attributes of any element, and in metadata the EPUB writer reads as files
-- (cover-image, css, stylesheet: measured, each embedded the file it named). Every such reference
-- becomes empty, whatever it names; a data: URI stays (its bytes travel in the upload), and so
-- does a link's href (<a>, <area>: a reader follows it later, no writer fetches it).

-- Attributes whose value a writer or a reader of the output may load.
local RESOURCE_ATTRIBUTES = {
  src = true, srcset = true, poster = true, data = true, href = true, ['xlink:href'] = true,
  background = true, lowsrc = true, dynsrc = true, codebase = true, archive = true, classid = true,
  longdesc = true, manifest = true, icon = true, formaction = true, action = true, profile = true,
  cite = true, usemap = true, imagesrcset = true,
}
-- Tags whose href is a link to follow, not a resource to load.
local LINK_TAGS = { a = true, area = true }
-- Metadata that a writer reads as a file name (the EPUB writer: cover-image, css, stylesheet;
-- the others are pandoc's file options, harmless in metadata today and kept out all the same).
local FILE_METADATA = {
  'cover-image', 'epub-cover-image', 'css', 'stylesheet', 'epub-embed-font', 'epub-fonts',
  'bibliography', 'csl', 'citation-abbreviations', 'reference-doc', 'template',
  'include-before-body', 'include-after-body', 'include-in-header', 'abbreviations',
}

local function kept(value)
  return value:match('^%s*[Dd][Aa][Tt][Aa]:') ~= nil
end

-- CSS anywhere in the text: url(...) emptied (data: kept), @import removed. Also applied to
-- whole raw HTML, so a <style> block and a style attribute are both covered.
local function clean_css(text)
  text = text:gsub('[Uu][Rr][Ll]%s*%(([^)]*)%)', function(inner)
    if kept(inner:gsub('^%s*["\']', '')) then return nil end
    return 'url()'
  end)
  text = text:gsub('@[Ii][Mm][Pp][Oo][Rr][Tt][^;{}]*;?', '')
  -- A CSS escape could spell url( or @import in a way the patterns above miss; no escapes at all.
  return (text:gsub('\\', ''))
end

local function clean_value(tag, name, value)
  name = name:lower()
  if RESOURCE_ATTRIBUTES[name] and not (name == 'href' and LINK_TAGS[tag]) and not kept(value) then
    return ''
  end
  return value
end

-- One tag's attributes: double-quoted, single-quoted and unquoted values.
local function clean_tag(tag, text)
  text = text:gsub('([%w_:.-]+)(%s*=%s*)"([^"]*)"', function(name, eq, value)
    return name .. eq .. '"' .. clean_value(tag, name, value) .. '"'
  end)
  text = text:gsub("([%w_:.-]+)(%s*=%s*)'([^']*)'", function(name, eq, value)
    return name .. eq .. "'" .. clean_value(tag, name, value) .. "'"
  end)
  text = text:gsub('([%w_:.-]+)(%s*=%s*)([^%s"\'>=][^%s"\'>]*)', function(name, eq, value)
    return name .. eq .. clean_value(tag, name, value)
  end)
  return text
end

-- Raw HTML: each tag (found honouring quoted values, which may hold '>') cleaned, then its CSS.
local function clean_html(text)
  local out, i, n = {}, 1, #text
  while i <= n do
    local lt = text:find('<', i, true)
    if not lt then
      out[#out + 1] = text:sub(i)
      break
    end
    out[#out + 1] = text:sub(i, lt - 1)
    local tag = text:match('^<%s*([%a][%w:-]*)', lt)
    if not tag then
      out[#out + 1] = '<'
      i = lt + 1
    else
      local j, quote = lt + 1, nil
      while j <= n do
        local c = text:sub(j, j)
        if quote then
          if c == quote then quote = nil end
        elseif c == '"' or c == "'" then
          quote = c
        elseif c == '>' then
          break
        end
        j = j + 1
      end
      out[#out + 1] = clean_tag(tag:lower(), text:sub(lt, j))
      i = j + 1
    end
  end
  return clean_css(table.concat(out))
end

-- Formats whose raw text the HTML-based writers (EPUB among them) copy into their output.
local function is_markup(format)
  format = format:lower()
  return format:match('^html') ~= nil or format:match('^epub') ~= nil or format == 'css' or format == 'svg'
end

local function raw(element)
  if is_markup(element.format) then
    element.text = clean_html(element.text)
    return element
  end
end

-- An element's attributes (a bracketed span's {src=... style=...}): the same rule.
local function attributes(element)
  local changed = false
  for name, value in pairs(element.attributes) do
    local clean = name:lower() == 'style' and clean_css(value) or clean_value('', name, value)
    if clean ~= value then
      element.attributes[name] = clean
      changed = true
    end
  end
  if changed then return element end
end

function Meta(meta)
  for _, key in ipairs(FILE_METADATA) do meta[key] = nil end
  return meta
end

return {
  { RawInline = raw, RawBlock = raw, Span = attributes, Div = attributes, Header = attributes,
    Code = attributes, CodeBlock = attributes, Link = attributes, Image = attributes, Table = attributes },
  { Meta = Meta },
}
