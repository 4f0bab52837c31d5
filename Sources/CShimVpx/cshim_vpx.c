#include "cshim_vpx.h"

vpx_codec_err_t cshim_vpx_control_int(vpx_codec_ctx_t *ctx, int controlId, int value) {
  return vpx_codec_control_(ctx, controlId, value);
}
vpx_codec_err_t cshim_vpx_control_get_int(vpx_codec_ctx_t *ctx, int controlId, int *value) {
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
