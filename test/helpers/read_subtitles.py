#!/usr/bin/python3
"""Reads subtitle files with parsers of our own, independent of ffmpeg, for the subtitle tests.

Usage: read_subtitles.py FILE...   (the format is the file's extension: srt, vtt, ass, ttml or lrc)
Prints one JSON object: {FILE: {"cues": [{"start", "end", "text"}], "tags": [...]} or {"error": ...}}.
Times are seconds; a cue's text is what a viewer reads: styling removed, entities decoded, its
lines joined by "\n". "tags" lists the markup found in the cue text (WebVTT tag names, TTML element
names), so that a test can see that a source's text never became markup.
"""
import html
import json
import re
import sys
import xml.etree.ElementTree as ET

TIME = re.compile(r'^(?:(\d+):)?(\d{1,2}):(\d{1,2})[,.](\d{1,3})$')


def seconds(stamp):
    match = TIME.match(stamp.strip())
    if not match:
        raise ValueError(f'not a time: {stamp!r}')
    hours, minutes, secs, fraction = match.groups()
    return int(hours or 0) * 3600 + int(minutes) * 60 + int(secs) + int(fraction.ljust(3, '0')) / 1000


def blocks(text):
    return [block.split('\n') for block in re.split(r'\n\s*\n', text.replace('\r\n', '\n').strip()) if block.strip()]


def read_srt(text):
    cues = []
    for lines in blocks(text):
        timing = next(i for i, line in enumerate(lines) if '-->' in line)
        start, end = (part.strip() for part in lines[timing].split('-->'))
        body = '\n'.join(lines[timing + 1:])
        # SubRip's HTML-like styling (<b>, <i>, <font ...>) and ASS-like position codes ({\an8}).
        body = re.sub(r'</?(?:b|i|u|s|font)\b[^>]*>', '', body)
        body = re.sub(r'\{\\[^}]*\}', '', body)
        cues.append({'start': seconds(start), 'end': seconds(end.split()[0]), 'text': body})
    return cues, []


def read_vtt(text):
    cues, tags = [], []
    parts = blocks(text)
    assert parts and parts[0][0].startswith('WEBVTT'), 'no WEBVTT header'
    for lines in parts[1:]:
        timing = next((i for i, line in enumerate(lines) if '-->' in line), None)
        if timing is None:
            continue  # NOTE, STYLE or REGION block
        start, rest = lines[timing].split('-->', 1)
        body = '\n'.join(lines[timing + 1:])
        # WebVTT cue text: tags are <name.classes annotation>...</name>; the rest is text with entities.
        tags += [name.lower() for name in re.findall(r'<\s*/?\s*([A-Za-z][\w-]*)', body)]
        body = re.sub(r'<[^>]*>', '', body)
        cues.append({'start': seconds(start), 'end': seconds(rest.split()[0]), 'text': html.unescape(body)})
    return cues, sorted(set(tags))


def read_ass(text):
    cues, fields = [], None
    section = ''
    for line in text.replace('\r\n', '\n').split('\n'):
        if line.startswith('['):
            section = line.strip().lower()
        elif section == '[events]' and line.startswith('Format:'):
            fields = [name.strip().lower() for name in line[len('Format:'):].split(',')]
        elif section == '[events]' and line.startswith('Dialogue:'):
            values = line[len('Dialogue:'):].lstrip().split(',', len(fields) - 1)
            event = dict(zip(fields, values))
            body = re.sub(r'\{[^}]*\}', '', event['text'])
            body = body.replace('\\N', '\n').replace('\\n', '\n').replace('\\h', '\u00a0')
            cues.append({'start': seconds(event['start']), 'end': seconds(event['end']), 'text': body})
    return cues, []


def ttml_time(stamp):
    if stamp.endswith('ms'):
        return float(stamp[:-2]) / 1000
    if stamp.endswith('s'):
        return float(stamp[:-1])
    return seconds(stamp)


def read_ttml(raw):
    root = ET.fromstring(raw)
    namespace = '{http://www.w3.org/ns/ttml}'
    assert root.tag == namespace + 'tt', f'root is {root.tag}'
    tags = sorted({element.tag.split('}')[-1] for element in root.iter(namespace + 'body') for element in element.iter()})

    def text_of(element):
        parts = [element.text or '']
        for child in element:
            parts.append('\n' if child.tag == namespace + 'br' else text_of(child))
            parts.append(child.tail or '')
        return ''.join(parts)

    cues = [{'start': ttml_time(p.get('begin')), 'end': ttml_time(p.get('end')), 'text': text_of(p)} for p in root.iter(namespace + 'p')]
    return cues, tags


LRC_TIME = re.compile(r'\[(\d+):(\d{1,2}(?:[.:]\d{1,3})?)\]')


def read_lrc(text):
    """LRC: each timed line shows from its time until the next timed line; a line without text clears."""
    timed = []
    for line in text.replace('\r\n', '\n').split('\n'):
        stamps = []
        while LRC_TIME.match(line):
            match = LRC_TIME.match(line)
            stamps.append(int(match.group(1)) * 60 + float(match.group(2).replace(':', '.')))
            line = line[match.end():]
        timed += [(stamp, line.strip()) for stamp in stamps]
    timed.sort(key=lambda entry: entry[0])
    cues = []
    for (start, body), following in zip(timed, timed[1:] + [None]):
        if body:
            assert following is not None, f'the last lyric ({body!r}) never ends'
            cues.append({'start': start, 'end': following[0], 'text': body})
    return cues, []


READERS = {'lrc': read_lrc, 'srt': read_srt, 'vtt': read_vtt, 'ass': read_ass, 'ssa': read_ass, 'ttml': read_ttml}

result = {}
for path in sys.argv[1:]:
    try:
        with open(path, 'rb') as handle:
            raw = handle.read()
        kind = path.rsplit('.', 1)[-1]
        cues, tags = READERS[kind](raw if kind == 'ttml' else raw.decode('utf-8-sig'))
        result[path] = {'cues': cues, 'tags': tags}
    except Exception as error:  # reported to the test, which fails on it
        result[path] = {'error': f'{type(error).__name__}: {error}'}
print(json.dumps(result, ensure_ascii=False))
