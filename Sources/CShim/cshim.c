#include "cshim.h"

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

vpx_codec_err_t cshim_vpx_control_int(vpx_codec_ctx_t *ctx, int controlId, int value) {
  return vpx_codec_control_(ctx, controlId, value);
}
vpx_codec_err_t cshim_vpx_vp8_encoder_init(vpx_codec_ctx_t *ctx, const vpx_codec_enc_cfg_t *cfg) {
  return vpx_codec_enc_init(ctx, vpx_codec_vp8_cx(), cfg, 0);
}
vpx_codec_err_t cshim_vpx_vp8_encoder_default_config(vpx_codec_enc_cfg_t *cfg) {
  return vpx_codec_enc_config_default(vpx_codec_vp8_cx(), cfg, 0);
}
vpx_codec_err_t cshim_vpx_vp8_decoder_init(vpx_codec_ctx_t *ctx, unsigned int threads) {
  vpx_codec_dec_cfg_t cfg = {threads, 0, 0};
  return vpx_codec_dec_init(ctx, vpx_codec_vp8_dx(), &cfg, 0);
}

void cshim_g_object_set_bool(gpointer object, const char *property, bool value) {
  g_object_set(object, property, (gboolean)(value ? TRUE : FALSE), NULL);
}
void cshim_g_object_set_uint(gpointer object, const char *property, unsigned int value) {
  g_object_set(object, property, (guint)value, NULL);
}
void cshim_g_object_set_string(gpointer object, const char *property, const char *value) {
  g_object_set(object, property, value, NULL);
}
bool cshim_g_object_get_bool(gpointer object, const char *property) {
  gboolean value = FALSE;
  g_object_get(object, property, &value, NULL);
  return value ? true : false;
}
