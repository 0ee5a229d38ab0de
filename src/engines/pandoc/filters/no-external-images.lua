-- convertd: an image stays only if its data travels inside the upload: a data: URI, or media
-- a docx, odt or epub input carries (pandoc's media bag). Any other image names a file outside
-- the upload (another user's file, /etc/passwd) or a URL, which pandoc would fetch and embed into
-- docx, odt and epub outputs (docs/security.md#pandoc): it becomes its description instead. The OS
-- sandbox hides such files and blocks the network as well; this filter also keeps conversions
-- from failing on what they could not fetch.
function Image(image)
  if image.src:sub(1, 5):lower() == 'data:' or pandoc.mediabag.lookup(image.src) ~= nil then
    return nil
  end
  return pandoc.Span(image.caption)
end
