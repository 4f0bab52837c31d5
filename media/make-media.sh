#!/usr/bin/env bash
# Regenerates the small test media in this folder with sox and ffmpeg
# (Debian packages; scripts/setup.sh installs them). Deterministic content:
#   tone-440-660.wav  5 s, 44.1 kHz stereo PCM: 440 Hz left, 660 Hz right (resampled to 48 kHz when sent)
#   tone.opus         the same tones as Ogg Opus, 48 kHz stereo, 64 kbit/s (sent as is)
#   testsrc.ivf       5 s of ffmpeg's test pattern, 320x240 at 30 fps, VP8 (sent as is)
#   testsrc.y4m       2 s of the test pattern, 320x240 at 15 fps, raw I420 (encoded to VP8 when sent)
set -euo pipefail
cd "$(dirname "$0")"
sox -n -r 44100 -b 16 -c 2 tone-440-660.wav synth 5 sine 440 sine 660 gain -6
ffmpeg -loglevel error -y -i tone-440-660.wav -ar 48000 -c:a libopus -b:a 64k tone.opus
ffmpeg -loglevel error -y -f lavfi -i testsrc=size=320x240:rate=30:duration=5 \
  -c:v libvpx -b:v 600k -deadline realtime -cpu-used 8 -g 60 -auto-alt-ref 0 -pix_fmt yuv420p testsrc.ivf
ffmpeg -loglevel error -y -f lavfi -i testsrc=size=320x240:rate=15:duration=2 -pix_fmt yuv420p testsrc.y4m
ls -l tone-440-660.wav tone.opus testsrc.ivf testsrc.y4m
