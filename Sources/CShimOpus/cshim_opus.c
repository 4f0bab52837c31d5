#include "cshim_opus.h"

int cshim_opus_set_bitrate(OpusEncoder *enc, int32_t bitsPerSecond) {
  return opus_encoder_ctl(enc, OPUS_SET_BITRATE(bitsPerSecond));
}
int cshim_opus_set_inband_fec(OpusEncoder *enc, bool enabled) {
  return opus_encoder_ctl(enc, OPUS_SET_INBAND_FEC(enabled ? 1 : 0));
}
int cshim_opus_set_packet_loss_perc(OpusEncoder *enc, int32_t percent) {
  return opus_encoder_ctl(enc, OPUS_SET_PACKET_LOSS_PERC(percent));
}
int cshim_opus_set_complexity(OpusEncoder *enc, int32_t complexity) {
  return opus_encoder_ctl(enc, OPUS_SET_COMPLEXITY(complexity));
}
int cshim_opus_set_dtx(OpusEncoder *enc, bool enabled) {
  return opus_encoder_ctl(enc, OPUS_SET_DTX(enabled ? 1 : 0));
}
int cshim_opus_get_lookahead(OpusEncoder *enc, int32_t *samples) {
  opus_int32 value = 0;
  int rc = opus_encoder_ctl(enc, OPUS_GET_LOOKAHEAD(&value));
  *samples = value;
  return rc;
}
