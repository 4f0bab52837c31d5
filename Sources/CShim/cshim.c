#include <sys/prctl.h>
#include <malloc.h>
#include "cshim.h"

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
    // Blocks from the heap and blocks malloc mapped on their own (large ones).
    // Both are live: counting only the first made a large buffer look like new
    // growth when glibc's adaptive mmap threshold moved it onto the heap (after
    // toxcore, restarted, freed its old instance's big arrays).
    return info.uordblks + info.hblkhd;
}

bool cshim_disable_core_dumps(void) {
    return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0;
}
