// The libopus calls Swift cannot make: opus_encoder_ctl is variadic. One-line forwards.
#ifndef CSHIM_OPUS_H
#define CSHIM_OPUS_H

#include <stdbool.h>
#include <stdint.h>

#include <opus/opus.h>

// opus_encoder_ctl is variadic (OPUS_SET_* macros expand to request, value).
int cshim_opus_set_bitrate(OpusEncoder *enc, int32_t bitsPerSecond);
int cshim_opus_set_inband_fec(OpusEncoder *enc, bool enabled);
int cshim_opus_set_packet_loss_perc(OpusEncoder *enc, int32_t percent);
int cshim_opus_set_dtx(OpusEncoder *enc, bool enabled);
int cshim_opus_set_complexity(OpusEncoder *enc, int32_t complexity);
int cshim_opus_get_lookahead(OpusEncoder *enc, int32_t *samples);

#endif
