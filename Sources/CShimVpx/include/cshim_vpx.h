// The libvpx calls Swift cannot make: controls and initialisers are macros over variadic functions.
#ifndef CSHIM_VPX_H
#define CSHIM_VPX_H

#include <stdbool.h>
#include <stdint.h>

#include <vpx/vpx_encoder.h>
#include <vpx/vpx_decoder.h>
#include <vpx/vp8cx.h>
#include <vpx/vp8dx.h>

// vpx_codec_control is a macro over the variadic vpx_codec_control_.
vpx_codec_err_t cshim_vpx_control_int(vpx_codec_ctx_t *ctx, int controlId, int value);
// The same for controls that read an int back (VP8E_GET_LAST_QUANTIZER).
vpx_codec_err_t cshim_vpx_control_get_int(vpx_codec_ctx_t *ctx, int controlId, int *value);
// vpx_codec_enc_init / vpx_codec_dec_init are macros that pass the ABI version.
vpx_codec_err_t cshim_vpx_vp8_encoder_init(vpx_codec_ctx_t *ctx, const vpx_codec_enc_cfg_t *cfg);
vpx_codec_err_t cshim_vpx_vp8_encoder_default_config(vpx_codec_enc_cfg_t *cfg);
vpx_codec_err_t cshim_vpx_vp8_decoder_init(vpx_codec_ctx_t *ctx, unsigned int threads);

#endif
