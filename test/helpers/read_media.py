#!/usr/bin/python3
"""Describes audio and video files and decodes their sound, for the tests (test/helpers/media.ts).

Debian's PyAV (python3-av) over Debian's libavformat and libavcodec: the same libraries and
defaults as the ffprobe and ffmpeg command lines, in one long-lived process (a command-line
start costs about 0.2 s of CPU here, and a media suite checks every output twice). The service's
engine runs the ffmpeg command line in its sandbox with its own arguments; this only reads.

    read_media.py --serve     one JSON request a line, one JSON answer a line:
        ["FILE", {"count_frames": bool, "picture_span": bool, "sound": bool}]
        -> {"format": {...}, "streams": [...], "packets": [...]?, "sound": BASE64?} | {"error": "..."}

The answer has ffprobe's field names and meanings: format_name, duration (seconds), per stream
codec_type, codec_name (the codec's own name, as avcodec_get_name gives it, never a decoder's
such as libdav1d), width, height, r_frame_rate, nb_read_frames (frames the decoder returned,
as -count_frames counts them), sample_rate, channels; the video packets' pts_time and
duration_time for picture_span. The sound is the first audio stream as `ffmpeg -map 0:a:0 -ac 1
-ar 16000 -f s16le` writes it: mono, 16 kHz, signed 16-bit little-endian, resampled by
libswresample through the same aformat filter.
"""
import base64
import ctypes
import ctypes.util
import json
import sys
from fractions import Fraction

import av
import numpy as np

MEASURE_RATE = 16000

_avcodec = ctypes.CDLL(ctypes.util.find_library('avcodec'))
_avcodec.avcodec_get_name.restype = ctypes.c_char_p
_avcodec.avcodec_get_name.argtypes = [ctypes.c_int]


def codec_name(context):
    """The codec's name (av1, opus, amr_nb), whichever decoder PyAV picked for it."""
    return _avcodec.avcodec_get_name(context.codec.id).decode()


def rate_text(rate):
    if not rate:
        return '0/0'
    rate = Fraction(rate)
    return f'{rate.numerator}/{rate.denominator}'


def time_text(value, time_base):
    return None if value is None or time_base is None else repr(float(value * time_base))


def packets(container, *streams):
    """
    The streams' packets up to the end, or up to a read error: the ffmpeg and ffprobe command
    lines take any error of the demuxer for the end of the input (Westwood's AUD demuxer ends
    with EIO, not EOF).
    """
    iterator = container.demux(*streams)
    while True:
        try:
            packet = next(iterator)
        except StopIteration:
            return
        except (av.error.FFmpegError, OSError):
            return
        yield packet


def decoded(packet):
    """The packet's frames; none when the decoder refuses it, as ffmpeg and ffprobe log that and go on."""
    try:
        return packet.decode()
    except av.error.FFmpegError:
        return []


def describe(path, count_frames, picture_span):
    with av.open(path) as container:
        streams = []
        for stream in container.streams:
            context = stream.codec_context
            entry = {'index': stream.index, 'codec_type': stream.type}
            if context is not None and stream.type in ('video', 'audio', 'subtitle'):
                entry['codec_name'] = codec_name(context)
            if stream.type == 'video':
                entry.update(width=context.width, height=context.height, r_frame_rate=rate_text(stream.base_rate))
            elif stream.type == 'audio':
                entry.update(sample_rate=str(context.sample_rate), channels=context.channels)
            streams.append(entry)
        answer = {'format': {'format_name': container.format.name}, 'streams': streams}
        if container.duration is not None:
            answer['format']['duration'] = repr(container.duration / av.time_base)
        if picture_span:
            video = [s for s in container.streams if s.type == 'video']
            timed = []
            # demux() of no stream at all would be every stream's packets.
            for packet in packets(container, *video) if video else []:
                if packet.size == 0 and packet.pts is None:
                    continue  # the demuxer's end-of-stream marker, not a packet of the file
                timed.append({'codec_type': 'video', 'stream_index': packet.stream.index,
                                'pts_time': time_text(packet.pts, packet.time_base),
                                'duration_time': time_text(packet.duration, packet.time_base)})
            answer['packets'] = timed
    if count_frames:
        with av.open(path) as container:
            counted = {s.index: 0 for s in container.streams if s.type in ('video', 'audio')}
            wanted = [s for s in container.streams if s.index in counted]
            for packet in packets(container, *wanted):
                counted[packet.stream.index] += len(decoded(packet))
            for entry in answer['streams']:
                if entry['index'] in counted:
                    entry['nb_read_frames'] = str(counted[entry['index']])
    return answer


def with_layout(frame, context):
    """
    The frame with the stream's channel layout where the decoder left it unset (TTA's frames say
    "0 channels"): the ffmpeg command line falls back on the stream's, PyAV's resampler refuses.
    """
    if len(frame.layout.channels) > 0:
        return frame
    if frame.format.is_planar:
        raise ValueError('planar audio without a channel layout')
    # Interleaved samples of every channel in the one plane (its buffer may be padded).
    dtype = {'u8': 'u1', 's16': '<i2', 's32': '<i4', 'flt': '<f4', 'dbl': '<f8'}[frame.format.name]
    count = frame.samples * context.channels
    samples = np.frombuffer(bytes(frame.planes[0]), dtype=dtype)[:count].reshape(1, count)
    copy = av.AudioFrame.from_ndarray(samples, format=frame.format.name, layout=context.layout.name)
    copy.sample_rate = frame.sample_rate
    copy.pts = frame.pts
    copy.time_base = frame.time_base
    return copy


def sound(path):
    with av.open(path) as container:
        audio = next((s for s in container.streams if s.type == 'audio'), None)
        if audio is None:
            raise ValueError('no audio stream')
        resampler = av.AudioResampler(format='s16', layout='mono', rate=MEASURE_RATE)
        chunks = []

        def take(frames):
            for frame in frames or []:
                chunks.append(frame.to_ndarray().astype('<i2').tobytes())

        for packet in packets(container, audio):
            for frame in decoded(packet):
                take(resampler.resample(with_layout(frame, audio.codec_context)))
        take(resampler.resample(None))
    return base64.b64encode(b''.join(chunks)).decode()


def answer(request):
    path, options = request
    result = describe(path, options.get('count_frames', False), options.get('picture_span', False)) if options.get('probe', True) else {}
    if options.get('sound'):
        result['sound'] = sound(path)
    return result


def main():
    if sys.argv[1:] != ['--serve']:
        sys.exit(__doc__)
    for line in sys.stdin:
        try:
            result = answer(json.loads(line))
        except Exception as error:  # that file's answer: a damaged or soundless file
            result = {'error': f'{type(error).__name__}: {error}'}
        print(json.dumps(result), flush=True)


if __name__ == '__main__':
    main()
