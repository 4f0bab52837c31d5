#include <malloc.h>
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
unsigned int cshim_g_object_get_uint(gpointer object, const char *property) {
  guint value = 0;
  g_object_get(object, property, &value, NULL);
  return value;
}

// MARK: CRC32C

#include <pthread.h>
#include <string.h>
#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

static uint32_t crc32c_table[256];

static void crc32c_make_table(void) {
  for (uint32_t n = 0; n < 256; n++) {
    uint32_t c = n;
    for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    crc32c_table[n] = c;
  }
}

static uint32_t crc32c_software(uint32_t crc, const uint8_t *p, size_t length) {
  while (length--) crc = crc32c_table[(crc ^ *p++) & 0xFF] ^ (crc >> 8);
  return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t crc32c_sse42(uint32_t crc, const uint8_t *p, size_t length) {
  uint64_t c = crc;
  while (length >= 8) {
    uint64_t word;
    memcpy(&word, p, 8);  // unaligned load
    c = _mm_crc32_u64(c, word);
    p += 8;
    length -= 8;
  }
  uint32_t c32 = (uint32_t)c;
  while (length--) c32 = _mm_crc32_u8(c32, *p++);
  return c32;
}
#endif

typedef uint32_t (*crc32c_function)(uint32_t, const uint8_t *, size_t);
static crc32c_function crc32c_chosen;

static void crc32c_choose(void) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("sse4.2")) {
    crc32c_chosen = crc32c_sse42;
    return;
  }
#endif
  crc32c_chosen = crc32c_software;
}

static pthread_once_t crc32c_once = PTHREAD_ONCE_INIT;

uint32_t cshim_crc32c_update(uint32_t crc, const void *data, size_t length) {
  pthread_once(&crc32c_once, crc32c_choose);
  if (crc32c_chosen == crc32c_software) return cshim_crc32c_update_table(crc, data, length);
  return crc32c_chosen(crc, (const uint8_t *)data, length);
}

uint32_t cshim_crc32c_update_table(uint32_t crc, const void *data, size_t length) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, crc32c_make_table);
  return crc32c_software(crc, (const uint8_t *)data, length);
}

bool cshim_crc32c_is_hardware(void) {
  pthread_once(&crc32c_once, crc32c_choose);
  return crc32c_chosen != crc32c_software;
}

size_t cshim_heap_bytes_in_use(void) {
    struct mallinfo2 info = mallinfo2();
    return info.uordblks;
}
