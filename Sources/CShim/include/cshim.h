// cshim: the few C calls Swift cannot make directly, because they are
// macros or variadic functions in the libraries' headers, and the one CPU
// instruction it cannot emit (CRC32C). Every other function here is a
// one-line forward; logic belongs in Swift.
#ifndef CSHIM_H
#define CSHIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <opus/opus.h>
#include <vpx/vpx_encoder.h>
#include <vpx/vpx_decoder.h>
#include <vpx/vp8cx.h>
#include <vpx/vp8dx.h>
#include <glib-object.h>

// opus_encoder_ctl is variadic (OPUS_SET_* macros expand to request, value).
int cshim_opus_set_bitrate(OpusEncoder *enc, int32_t bitsPerSecond);
int cshim_opus_set_inband_fec(OpusEncoder *enc, bool enabled);
int cshim_opus_set_packet_loss_perc(OpusEncoder *enc, int32_t percent);
int cshim_opus_set_dtx(OpusEncoder *enc, bool enabled);
int cshim_opus_set_complexity(OpusEncoder *enc, int32_t complexity);
int cshim_opus_get_lookahead(OpusEncoder *enc, int32_t *samples);

// vpx_codec_control is a macro over the variadic vpx_codec_control_.
vpx_codec_err_t cshim_vpx_control_int(vpx_codec_ctx_t *ctx, int controlId, int value);
// vpx_codec_enc_init / vpx_codec_dec_init are macros that pass the ABI version.
vpx_codec_err_t cshim_vpx_vp8_encoder_init(vpx_codec_ctx_t *ctx, const vpx_codec_enc_cfg_t *cfg);
vpx_codec_err_t cshim_vpx_vp8_encoder_default_config(vpx_codec_enc_cfg_t *cfg);
vpx_codec_err_t cshim_vpx_vp8_decoder_init(vpx_codec_ctx_t *ctx, unsigned int threads);

// g_object_set is variadic and NULL-terminated.
void cshim_g_object_set_bool(gpointer object, const char *property, bool value);
void cshim_g_object_set_uint(gpointer object, const char *property, unsigned int value);
void cshim_g_object_set_string(gpointer object, const char *property, const char *value);
bool cshim_g_object_get_bool(gpointer object, const char *property);
unsigned int cshim_g_object_get_uint(gpointer object, const char *property);

// CRC32C (Castagnoli, reflected, as SCTP uses it: RFC 9260 appendix A),
// continued from `crc` over `length` bytes, without the initial or final
// inversion: start from 0xFFFFFFFF and invert the result. Uses the SSE4.2
// crc32 instruction when the CPU has it (one instruction per 8 bytes),
// a table otherwise. Why here: Debian's usrsctp computes its checksum with
// an unoptimised table, half of its CPU on a data channel; usrsctp's
// checksum offload hands that job to us.
uint32_t cshim_crc32c_update(uint32_t crc, const void *data, size_t length);
// The table version, whatever the CPU has (so tests can compare the two).
uint32_t cshim_crc32c_update_table(uint32_t crc, const void *data, size_t length);
// Whether cshim_crc32c_update uses the CPU instruction (for benchmarks and logs).
bool cshim_crc32c_is_hardware(void);

// Heap bytes in use (glibc's mallinfo2 uordblks): for tests that look for
// leaks, steadier than the resident size (which moves with malloc's pools).
size_t cshim_heap_bytes_in_use(void);

#endif
